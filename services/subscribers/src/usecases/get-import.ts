import type { ImportJobDoc } from "../storage/documents.js";
import type { Scope } from "./deps.js";
import { loadImport } from "./import-deps.js";

/** A job of the tenant with its progress; 404 for another tenant's id. */
export function getImport(scope: Scope, id: string): Promise<ImportJobDoc> {
  return loadImport(scope, id);
}
