import type { HttpMethod, OpenApiDocument, OperationObject } from "./types.js";

/** Finds an operation by id, with its method and OpenAPI path. */
export function findOperation(
  doc: OpenApiDocument,
  operationId: string,
): { method: HttpMethod; path: string; operation: OperationObject } | undefined {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(item) as Array<[HttpMethod, OperationObject]>) {
      if (operation.operationId === operationId) return { method, path, operation };
    }
  }
  return undefined;
}

/** Resolves `{ $ref: "#/components/…" }` one level (parameters and responses). */
export function resolveRef<T>(doc: OpenApiDocument, value: T | { $ref: string }): T {
  if (value && typeof value === "object" && "$ref" in value && typeof value.$ref === "string") {
    let node: unknown = doc;
    for (const part of value.$ref.replace(/^#\//, "").split("/")) node = (node as Record<string, unknown>)[part];
    return node as T;
  }
  return value as T;
}
