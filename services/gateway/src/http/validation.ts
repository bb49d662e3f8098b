import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020";
import type { OpenApiDocument, OperationObject, ParameterObject } from "../openapi/types.js";
import { resolveRef } from "../openapi/lookup.js";
import { Problem, type FieldError } from "./problem.js";

// Request bodies and query parameters are validated against the schemas of the
// OpenAPI document itself, compiled once at start-up: the document cannot say
// one thing while validation does another.

/** The document's own top-level keywords, declared so that ajv's strict mode accepts the document as a schema root. */
const OPENAPI_KEYWORDS = ["openapi", "info", "servers", "paths", "components", "security", "tags", "webhooks", "externalDocs"];

/**
 * Extension keyword of a schema with a `pattern`: the field error to give
 * when a value does not match (e.g. "is not a valid email address"), instead
 * of repeating the regular expression to the caller.
 */
export const PATTERN_MESSAGE = "x-pattern-message";
const DOC_KEY = "openapi.json";

/**
 * An ajv instance holding the document, so that `#/components/schemas/…`
 * references resolve. Formats (email, date-time) are annotations here: the
 * subscribers service owns the email rule, and one rule in one place cannot
 * disagree with itself. Tests build their own instance with formats asserted.
 */
export function createDocumentAjv(
  doc: OpenApiDocument,
  options: { coerceTypes?: boolean; validateFormats?: boolean; useDefaults?: boolean } = {},
): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    // Metadata values are "string | number | boolean" (with maxLength for the strings).
    allowUnionTypes: true,
    allErrors: true,
    validateFormats: options.validateFormats ?? false,
    coerceTypes: options.coerceTypes ?? false,
    useDefaults: options.useDefaults ?? false,
    // Errors carry their schema, for PATTERN_MESSAGE.
    verbose: true,
  });
  ajv.addVocabulary([...OPENAPI_KEYWORDS, PATTERN_MESSAGE]);
  ajv.addSchema(doc as unknown as Record<string, unknown>, DOC_KEY);
  return ajv;
}

/**
 * A schema from the document, made compilable on its own: its local
 * `#/components/…` references are pointed at the document held by the ajv
 * instance.
 */
export function rebaseSchema<T>(schema: T): T {
  return JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, `"${DOC_KEY}#/components/`)) as T;
}

/** The compiled validator of a component schema, e.g. `Subscriber`. */
export function schemaValidator(ajv: Ajv2020, name: string): ValidateFunction {
  const validate = ajv.getSchema(`${DOC_KEY}#/components/schemas/${name}`);
  if (!validate) throw new Error(`no schema ${name} in the OpenAPI document`);
  return validate;
}

export interface OperationValidators {
  /** Validates (and fills defaults into) the parsed body; undefined when the operation takes none. */
  body?: (value: unknown) => unknown;
  /** The body may be left out (`requestBody.required: false`): a request without one, or with an empty one, has none (http/body.ts). */
  bodyOptional?: boolean;
  /** Validates the query string; returns it with numbers coerced and defaults applied. */
  query: (raw: Record<string, string | string[] | undefined>) => Record<string, unknown>;
  /** Validates the declared header parameters; returns them by their declared names (absent ones left out). */
  headers: (raw: Record<string, string | string[] | undefined>) => Record<string, unknown>;
  /** Validates the path parameters (as the router decoded them) against their declared schemas. */
  path: (raw: Record<string, string | string[] | undefined>) => Record<string, unknown>;
}

/** Compiles the validators of every operation of the document, once. */
export class RequestValidators {
  private readonly byOperation = new Map<string, OperationValidators>();

  private readonly components = new Map<string, (value: unknown) => unknown>();
  private readonly bodies: Ajv2020;

  constructor(private readonly doc: OpenApiDocument) {
    const bodies = createDocumentAjv(doc, { useDefaults: true });
    this.bodies = bodies;
    // Query values arrive as strings: coerce to the declared types.
    const queries = createDocumentAjv(doc, { coerceTypes: true, useDefaults: true });
    for (const item of Object.values(doc.paths)) {
      for (const operation of Object.values(item) as OperationObject[]) {
        this.byOperation.set(operation.operationId, {
          body: this.compileBody(bodies, operation),
          bodyOptional: operation.requestBody !== undefined && !operation.requestBody.required,
          query: this.compileParameters(queries, operation, "query"),
          headers: this.compileParameters(bodies, operation, "header"),
          path: this.compileParameters(bodies, operation, "path"),
        });
      }
    }
  }

  /**
   * A component schema's validator for a part of a body checked on its own
   * (each message of a batch send): the value, or 400 `validation_failed`
   * naming its fields relative to the part.
   */
  component(name: string): (value: unknown) => unknown {
    let validator = this.components.get(name);
    if (!validator) {
      const validate = schemaValidator(this.bodies, name);
      const readOnly = this.readOnlyFields(name);
      validator = (value) => {
        if (!validate(value)) throw validationProblem(validate.errors ?? [], readOnly, "The message is invalid.");
        return value;
      };
      this.components.set(name, validator);
    }
    return validator;
  }

  for(operationId: string): OperationValidators {
    const validators = this.byOperation.get(operationId);
    if (!validators) throw new Error(`no operation ${operationId} in the OpenAPI document`);
    return validators;
  }

  private compileBody(ajv: Ajv2020, operation: OperationObject): OperationValidators["body"] {
    const schema = operation.requestBody?.content["application/json"]?.schema;
    if (!schema) return undefined;
    const name = String(schema.$ref ?? "").replace("#/components/schemas/", "");
    const validate = schemaValidator(ajv, name);
    const readOnly = this.readOnlyFields(name);
    return (value) => {
      if (!validate(value)) throw validationProblem(validate.errors ?? [], readOnly, "The request body is invalid.");
      return value;
    };
  }

  /**
   * Read-only fields of the resource a request schema writes: `SubscriberCreate`
   * writes `Subscriber`, whose `id`, `created_at`, … are marked readOnly. Sending
   * one gets "is read-only" rather than "is not a known field".
   */
  private readOnlyFields(requestSchema: string): Set<string> {
    const resource = requestSchema.replace(/(Create|Update)$/, "");
    const properties = (this.doc.components.schemas[resource]?.properties ?? {}) as Record<string, { readOnly?: boolean }>;
    return new Set(Object.entries(properties).filter(([, p]) => p.readOnly).map(([name]) => name));
  }

  /**
   * Query parameters (coerced to their declared types), header parameters
   * (strings; looked up case-insensitively, reported by their declared name)
   * or path parameters (as the router decoded them). A query parameter the
   * operation does not declare is refused (a misspelt `limt` would otherwise
   * be a silent default), and an integer must be written in plain decimal
   * digits: ajv's coercion uses Number(), which also reads `1e2` and `0x10`.
   */
  private compileParameters(ajv: Ajv2020, operation: OperationObject, where: "query" | "header" | "path"): OperationValidators["query"] {
    const params = (operation.parameters ?? [])
      .map((p) => resolveRef<ParameterObject>(this.doc, p))
      .filter((p) => p.in === where);
    if (params.length === 0 && where !== "query") return () => ({});
    const validate = ajv.compile({
      type: "object",
      properties: Object.fromEntries(params.map((p) => [p.name, rebaseSchema(p.schema)])),
      required: params.filter((p) => p.required).map((p) => p.name),
    });
    const names = params.map((p) => ({ name: p.name, key: where === "header" ? p.name.toLowerCase() : p.name }));
    const declared = new Set(names.map((n) => n.key));
    const integers = params.filter((p) => p.schema.type === "integer").map((p) => p.name);
    const detail = {
      header: "The request headers are invalid.",
      query: "The query parameters are invalid.",
      path: "The path is invalid.",
    }[where];
    return (raw) => {
      if (where === "query") {
        const unknown = Object.keys(raw).filter((key) => !declared.has(key));
        if (unknown.length > 0) throw unknownParameters(unknown, names.map((n) => n.name));
      }
      // Only the declared parameters, copied: ajv coerces in place.
      const values: Record<string, unknown> = {};
      for (const { name, key } of names) if (raw[key] !== undefined) values[name] = raw[key];
      const notDecimal = integers.filter((name) => typeof values[name] === "string" && !DECIMAL.test(values[name] as string));
      if (notDecimal.length > 0) {
        const errors = notDecimal.map((field) => ({ field, message: "must be an integer in decimal digits" }));
        throw new Problem("validation_failed", `${detail} ${errors.map((e) => `${e.field} ${e.message}`).join("; ")}.`, { errors });
      }
      if (!validate(values)) throw validationProblem(validate.errors ?? [], new Set(), detail);
      return values;
    };
  }
}

/** An integer query value as people write one: decimal digits, nothing else. */
const DECIMAL = /^[0-9]{1,15}$/;

/** A parameter name safe to repeat in a problem; others are not echoed. */
const SHOWABLE_NAME = /^[A-Za-z0-9_.\[\]-]{1,64}$/;

function unknownParameters(unknown: string[], known: string[]): Problem {
  const errors = unknown.map((name) => ({
    field: SHOWABLE_NAME.test(name) ? name : "query",
    message: SHOWABLE_NAME.test(name) ? "is not a known query parameter" : "has a query parameter that is not known",
  }));
  const accepted = known.length > 0 ? `This operation takes ${known.join(", ")}.` : "This operation takes no query parameters.";
  return new Problem("validation_failed", `Unknown query parameters: ${errors.map((e) => e.field).join(", ")}. ${accepted}`, { errors });
}

/** 400 `validation_failed`, one `{field, message}` per ajv error. */
function validationProblem(errors: ErrorObject[], readOnly: Set<string>, detail: string): Problem {
  const fieldErrors: FieldError[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    // Says only "property name must be valid"; the error of the name's own rule (pattern, length) says why.
    if (error.keyword === "propertyNames") continue;
    const fieldError = toFieldError(error, readOnly);
    // One message per field: an empty value breaks its length and its
    // pattern at once, and the first says enough.
    const key = fieldError.field;
    if (!seen.has(key)) {
      seen.add(key);
      fieldErrors.push(fieldError);
    }
  }
  const named = fieldErrors.map((e) => `${e.field} ${e.message}`).join("; ");
  return new Problem("validation_failed", named ? `${detail} ${named}.` : detail, { errors: fieldErrors });
}

function toFieldError(error: ErrorObject, readOnly: Set<string>): FieldError {
  const base = pointerToField(error.instancePath);
  const join = (name: string) => (base ? `${base}.${name}` : name);
  switch (error.keyword) {
    case "required":
      return { field: join(String(error.params.missingProperty)), message: "is required" };
    case "additionalProperties": {
      const name = String(error.params.additionalProperty);
      const isReadOnly = base === "" && readOnly.has(name);
      return { field: join(name), message: isReadOnly ? "is read-only" : "is not a known field" };
    }
    case "minProperties":
      return { field: base || "body", message: "must have at least one field" };
    case "enum":
      return { field: base, message: `must be one of: ${(error.params.allowedValues as unknown[]).join(", ")}` };
    case "pattern": {
      const message = (error.parentSchema as Record<string, unknown> | undefined)?.[PATTERN_MESSAGE];
      return { field: base || "body", message: typeof message === "string" ? message : "does not have the documented form" };
    }
    default:
      return { field: base || "body", message: error.message ?? "is invalid" };
  }
}

/** `/tags/0` -> `tags[0]`, `/metadata/a~1b` -> `metadata.a/b`. */
function pointerToField(pointer: string): string {
  if (!pointer) return "";
  let field = "";
  for (const raw of pointer.slice(1).split("/")) {
    const part = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    field += /^\d+$/.test(part) ? `[${part}]` : field ? `.${part}` : part;
  }
  return field;
}

