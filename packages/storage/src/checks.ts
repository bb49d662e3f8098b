// Validation and normalisation shared by every adapter. The port promises the
// same answer from MongoDB, FerretDB and the embedded store (which matches and
// updates with NeDB's functions); where those backends would disagree on an
// input (or one would take it and another reject it), it is rejected here, in
// one place, with a message naming the offending part. Errors are TypeErrors:
// they are programming errors, never a client's fault.

import { MAX_BATCH_DOCUMENTS, type AnyFilter as Filter, type AnyUpdate as Update, type Doc, type FindOptions, type IndexSpec } from "./types.js";

export type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isScalar(value: unknown): boolean {
  return (
    value === null ||
    typeof value === "string" ||
    typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value))
  );
}

function show(value: unknown): string {
  if (value === undefined) return "undefined";
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Collection names double as file names in the embedded store. */
export function checkCollectionName(name: string): void {
  if (
    typeof name !== "string" ||
    name.length > 100 ||
    !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(name) ||
    name.startsWith("system.")
  ) {
    throw new TypeError(`invalid collection name ${show(name)}: use letters, digits, _ - and inner dots`);
  }
}

/**
 * `__proto__` as a field name: JavaScript assigns it as the object's
 * prototype (the field is lost, or the object's inherited fields change), in
 * copies here as in NeDB, while MongoDB's driver keeps it as a field. No
 * backend would answer alike, so it is refused as a field name everywhere.
 */
const PROTO = "__proto__";

/** A field path: dotted segments, none empty, none an operator, none `__proto__`. */
function checkPath(path: string, where: string): void {
  if (path.length === 0 || path.split(".").some((part) => part.length === 0 || part.startsWith("$") || part === PROTO)) {
    throw new TypeError(`invalid field path ${show(path)} in ${where}${path.split(".").includes(PROTO) ? " (__proto__ cannot be a field name)" : ""}`);
  }
}

const CONDITION_OPERATORS = new Set(["$eq", "$ne", "$in", "$nin", "$all", "$gt", "$gte", "$lt", "$lte", "$exists"]);
const RANGE_OPERATORS = new Set(["$gt", "$gte", "$lt", "$lte"]);

export function checkFilter(filter: Filter, where = "filter"): void {
  if (!isPlainObject(filter)) throw new TypeError(`${where} must be a plain object`);
  for (const [key, value] of Object.entries(filter)) {
    if (key === "$or") {
      if (!Array.isArray(value) || value.length === 0) {
        throw new TypeError(`$or in ${where} must be a non-empty array of filters`);
      }
      value.forEach((branch, i) => checkFilter(branch as Filter, `${where}.$or[${i}]`));
      continue;
    }
    if (key.startsWith("$")) throw new TypeError(`unsupported operator ${key} in ${where}`);
    checkPath(key, where);
    checkCondition(key, value, where);
  }
}

function checkCondition(path: string, condition: unknown, where: string): void {
  if (condition === undefined) {
    throw new TypeError(`condition on ${path} in ${where} is undefined; omit the field or give a value`);
  }
  if (isScalar(condition)) return;
  if (!isPlainObject(condition)) {
    throw new TypeError(
      `condition on ${path} in ${where} must be a string, finite number, boolean, null or an operator object, got ${show(condition)}`,
    );
  }
  const operators = Object.entries(condition);
  if (operators.length === 0) throw new TypeError(`empty condition object on ${path} in ${where}`);
  for (const [op, operand] of operators) {
    if (!CONDITION_OPERATORS.has(op)) throw new TypeError(`unsupported operator ${op} on ${path} in ${where}`);
    if (op === "$exists") {
      if (typeof operand !== "boolean") throw new TypeError(`$exists on ${path} in ${where} takes true or false`);
    } else if (op === "$in" || op === "$nin") {
      if (!Array.isArray(operand) || !operand.every(isScalar)) {
        throw new TypeError(`${op} on ${path} in ${where} takes an array of strings, numbers, booleans or null`);
      }
    } else if (op === "$all") {
      // MongoDB's $all of nothing matches nothing and NeDB has no $all: keep to
      // a non-empty list of plain values, translated alike everywhere.
      if (!Array.isArray(operand) || operand.length === 0 || !operand.every((v) => isScalar(v) && v !== null)) {
        throw new TypeError(`$all on ${path} in ${where} takes a non-empty array of strings, numbers or booleans`);
      }
    } else if (RANGE_OPERATORS.has(op)) {
      // NeDB compares only strings with strings and numbers with numbers; MongoDB
      // also orders booleans, nulls and Dates. Keep to what both agree on.
      if (typeof operand !== "string" && !(typeof operand === "number" && Number.isFinite(operand))) {
        throw new TypeError(`${op} on ${path} in ${where} takes a string or a finite number`);
      }
    } else if (!isScalar(operand)) {
      throw new TypeError(`${op} on ${path} in ${where} takes a string, finite number, boolean or null`);
    }
  }
}

/**
 * Deep copy of a value to store, with the same result in every backend: object
 * fields set to undefined are dropped (as the MongoDB driver does with
 * `ignoreUndefined`), undefined array elements become null (as BSON does), -0
 * becomes 0 (JSON, which NeDB writes, has no -0). Values not every backend
 * stores alike (NaN, Infinity, bigint, functions, class instances, arrays directly
 * in arrays) are rejected. Dates pass through although they are not part of the
 * contract.
 */
export function cleanValue(value: unknown, where: string): unknown {
  try {
    return cleanQuietly(value);
  } catch (error) {
    if (error !== REFUSED) throw error;
  }
  // Refused: again with the path of what was refused, for the message.
  return cleanNamingPath(value, where);
}

/** What cleanQuietly throws at a value cleanNamingPath refuses. */
const REFUSED = new Error("refused");

/**
 * cleanValue's copy without naming where each value is: every document and
 * update goes through it, and naming each field's path (a string per field)
 * cost as much as the copy. It refuses exactly what cleanNamingPath refuses,
 * which then says why.
 */
function cleanQuietly(value: unknown): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw REFUSED;
    return value === 0 ? 0 : value;
  }
  if (Array.isArray(value)) {
    return value.map((element) => {
      if (Array.isArray(element)) throw REFUSED;
      return element === undefined ? null : cleanQuietly(element);
    });
  }
  if (value instanceof Date) return new Date(value.getTime());
  if (isPlainObject(value)) {
    const copy: PlainObject = {};
    let fields = 0;
    const keys = Object.keys(value);
    for (let i = 0; i < keys.length; i += 1) {
      const key = keys[i]!;
      const field = value[key];
      if (field === undefined) continue;
      if (key.startsWith("$") || key.includes(".") || key === PROTO) throw REFUSED;
      copy[key] = cleanQuietly(field);
      fields += 1;
    }
    return withFastFields(copy, fields);
  }
  throw REFUSED;
}

function cleanNamingPath(value: unknown, where: string): unknown {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`${where}: ${value} cannot be stored`);
    return value === 0 ? 0 : value;
  }
  if (Array.isArray(value)) {
    return value.map((element, i) => {
      // FerretDB v1 refuses arrays directly inside arrays ("nested arrays are not supported").
      if (Array.isArray(element)) throw new TypeError(`${where}[${i}]: an array may not directly contain an array`);
      return element === undefined ? null : cleanNamingPath(element, `${where}[${i}]`);
    });
  }
  if (value instanceof Date) return new Date(value.getTime());
  if (isPlainObject(value)) {
    const copy: PlainObject = {};
    let fields = 0;
    for (const [key, field] of Object.entries(value)) {
      if (field === undefined) continue;
      // NeDB refuses such names, and MongoDB treats them specially in queries.
      if (key.startsWith("$") || key.includes(".") || key === PROTO) {
        throw new TypeError(`${where}: field name ${show(key)} may not start with $, contain a dot or be __proto__`);
      }
      copy[key] = cleanNamingPath(field, `${where}.${key}`);
      fields += 1;
    }
    return withFastFields(copy, fields);
  }
  throw new TypeError(`${where}: ${typeof value === "object" ? "a class instance" : typeof value} cannot be stored`);
}

/**
 * Fields past which an object built one computed key at a time (`copy[key] =
 * …`) is turned by V8 into a hash table of its properties ("dictionary
 * mode"): about 1.5 KB for an email record's 30 fields, where a copy made by
 * spreading has them inline (about 300 bytes). The embedded store keeps every
 * document, so that was most of delivery's heap (154 of 331 MB after a
 * 100,000-recipient campaign); V8 spreads a hash-table object into inline fields.
 */
const KEYED_FIELDS_KEPT_INLINE = 16;

/** `copy` with its properties inline (see KEYED_FIELDS_KEPT_INLINE): itself when it has few, else a shallow copy. */
export function withFastFields(copy: PlainObject, fields: number): PlainObject {
  return fields > KEYED_FIELDS_KEPT_INLINE ? { ...copy } : copy;
}

export function checkDocument<T extends Doc>(doc: T): T {
  if (!isPlainObject(doc)) throw new TypeError("document must be a plain object");
  if (typeof doc._id !== "string" || doc._id.length === 0) throw new TypeError("document needs a non-empty string _id");
  return cleanValue(doc, "document") as T;
}

/** Checks a batch of documents (insertMany, upsertMany) and returns cleaned copies. */
export function checkBatch<T extends Doc>(docs: readonly T[], operation: string): T[] {
  if (!Array.isArray(docs)) throw new TypeError(`${operation} takes an array of documents`);
  if (docs.length > MAX_BATCH_DOCUMENTS) {
    throw new TypeError(`${operation} takes at most ${MAX_BATCH_DOCUMENTS} documents, got ${docs.length}`);
  }
  return docs.map((doc, i) => {
    try {
      return checkDocument(doc);
    } catch (error) {
      throw new TypeError(`${operation}: document ${i}: ${(error as Error).message}`);
    }
  });
}

/**
 * The scope of an upsertMany: equality on scalar fields only, since its
 * fields also go into each inserted document (as MongoDB's upsert does).
 */
/**
 * updateEach's updates, checked before any is applied: each filter checked and
 * each update normalized (null: an update that sets nothing, which still counts
 * its matches, as updateMany's).
 */
export function checkUpdates(updates: ReadonlyArray<{ filter: Filter; update: Update }>): Array<{ filter: Filter; update: Update | null }> {
  if (!Array.isArray(updates)) throw new TypeError("updateEach takes an array of { filter, update }");
  if (updates.length > MAX_BATCH_DOCUMENTS) throw new TypeError(`updateEach takes at most ${MAX_BATCH_DOCUMENTS} updates, got ${updates.length}`);
  return updates.map((entry, i) => {
    try {
      if (!isPlainObject(entry)) throw new TypeError("not a { filter, update }");
      const { filter, update } = entry as { filter: Filter; update: Update };
      checkFilter(filter);
      return { filter, update: normalizeUpdate(update) };
    } catch (error) {
      throw new TypeError(`updateEach: update ${i}: ${(error as Error).message}`);
    }
  });
}

export function checkUpsertScope(scope: Filter): Record<string, string | number | boolean> {
  checkFilter(scope, "upsertMany scope");
  for (const [field, value] of Object.entries(scope)) {
    if (field === "_id" || !(typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value)))) {
      throw new TypeError(`upsertMany scope: ${field} must be a field other than _id equal to a string, number or boolean`);
    }
  }
  return scope as Record<string, string | number | boolean>;
}

const UPDATE_OPERATORS = new Set(["$set", "$unset", "$inc", "$addToSet", "$pull", "$push"]);

/**
 * Validates an update and returns a cleaned copy without its no-op parts (empty
 * operators, `$set` of undefined, empty `$each`), or null when nothing is left.
 * Backends differ on no-ops (an empty `$each` creates an empty array in some, an
 * empty update replaces the whole document in NeDB), so none reaches them.
 */
export function normalizeUpdate(update: Update): Update | null {
  if (!isPlainObject(update)) throw new TypeError("update must be a plain object");
  const out: Record<string, PlainObject> = {};
  const paths: string[] = [];
  for (const [op, operand] of Object.entries(update)) {
    if (!UPDATE_OPERATORS.has(op)) throw new TypeError(`unsupported update operator ${show(op)}`);
    if (operand === undefined) continue;
    if (!isPlainObject(operand)) throw new TypeError(`${op} takes an object of field paths`);
    const kept: PlainObject = {};
    for (const [path, value] of Object.entries(operand)) {
      const where = `${op}.${path}`;
      checkPath(path, "update");
      if (path === "_id" || path.startsWith("_id.")) throw new TypeError("an update cannot change _id");
      switch (op) {
        case "$set":
          if (value === undefined) continue;
          kept[path] = cleanValue(value, where);
          break;
        case "$unset":
          if (value !== "" && value !== true && value !== 1) throw new TypeError(`${where} takes "", true or 1`);
          kept[path] = "";
          break;
        case "$inc":
          if (typeof value !== "number" || !Number.isFinite(value))
            throw new TypeError(`${where} takes a finite number`);
          kept[path] = value;
          break;
        case "$pull":
          if (!isScalar(value)) {
            throw new TypeError(`${where} takes a string, finite number, boolean or null (exact value)`);
          }
          kept[path] = value;
          break;
        default: {
          // $addToSet and $push: only the `$each` form, so a value that is itself
          // an array is never mistaken for a list of values.
          if (!isPlainObject(value) || Object.keys(value).length !== 1 || !Array.isArray(value.$each)) {
            throw new TypeError(`${where} takes { $each: [...] }`);
          }
          if (value.$each.length === 0) continue;
          kept[path] = { $each: cleanValue(value.$each, `${where}.$each`) };
        }
      }
      paths.push(path);
    }
    if (Object.keys(kept).length > 0) out[op] = kept;
  }
  // MongoDB rejects two operators on one path (or on a path and its parent),
  // NeDB would apply them in turn: refuse it everywhere.
  const sorted = [...paths].sort();
  for (let i = 1; i < sorted.length; i += 1) {
    const previous = sorted[i - 1] as string;
    const current = sorted[i] as string;
    if (current === previous || current.startsWith(`${previous}.`)) {
      throw new TypeError(`update touches ${previous} and ${current} in one operation`);
    }
  }
  return Object.keys(out).length > 0 ? (out as Update) : null;
}

export function checkFindOptions(options: FindOptions | undefined): void {
  if (options === undefined) return;
  if (!isPlainObject(options)) throw new TypeError("find options must be a plain object");
  const { sort, limit } = options;
  if (sort !== undefined) checkSortSpec(sort, "sort");
  if (limit !== undefined && !(typeof limit === "number" && Number.isSafeInteger(limit) && limit > 0)) {
    throw new TypeError(`limit must be a positive integer, got ${show(limit)}`);
  }
}

function checkSortSpec(spec: unknown, where: string): void {
  if (!isPlainObject(spec)) throw new TypeError(`${where} must be an object of field paths`);
  for (const [path, direction] of Object.entries(spec)) {
    checkPath(path, where);
    if (direction !== 1 && direction !== -1) throw new TypeError(`${where}.${path} must be 1 or -1`);
  }
}

export function checkIndexSpecs(specs: readonly IndexSpec[]): void {
  if (!Array.isArray(specs as unknown)) throw new TypeError("index specs must be an array");
  const names = new Set<string>();
  for (const spec of specs) {
    if (!isPlainObject(spec)) throw new TypeError("an index spec must be an object");
    if (typeof spec.name !== "string" || !/^[A-Za-z0-9_.-]{1,100}$/.test(spec.name)) {
      throw new TypeError(`invalid index name ${show(spec.name)}`);
    }
    if (names.has(spec.name)) throw new TypeError(`index name ${spec.name} given twice`);
    names.add(spec.name);
    checkSortSpec(spec.fields, `index ${spec.name}`);
    if (Object.keys(spec.fields).length === 0) throw new TypeError(`index ${spec.name} has no fields`);
    if (spec.unique !== undefined && typeof spec.unique !== "boolean") {
      throw new TypeError(`index ${spec.name}: unique must be a boolean`);
    }
    if (spec.arrayField !== undefined) {
      if (typeof spec.arrayField !== "string" || !Object.keys(spec.fields).includes(spec.arrayField)) {
        throw new TypeError(`index ${spec.name}: arrayField must name one of its fields`);
      }
      // Unique over array elements with other fields: nothing needs it, and it is kept out of the port.
      if (spec.unique === true) throw new TypeError(`index ${spec.name}: an index with an arrayField cannot be unique`);
    }
  }
}
