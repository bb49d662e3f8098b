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
  if (!isFieldPath(path)) {
    throw new TypeError(`invalid field path ${show(path)} in ${where}${path.split(".").includes(PROTO) ? " (__proto__ cannot be a field name)" : ""}`);
  }
}

/** checkPath's test, segment by segment in the string itself: every update's paths go through it, and splitting each made an array and a string per segment. */
function isFieldPath(path: string): boolean {
  if (path.length === 0) return false;
  let start = 0;
  for (;;) {
    const dot = path.indexOf(".", start);
    const end = dot === -1 ? path.length : dot;
    if (end === start || path.charCodeAt(start) === 36 /* $ */) return false;
    if (end - start === PROTO.length && path.startsWith(PROTO, start)) return false;
    if (dot === -1) return true;
    start = dot + 1;
  }
}

/** Whether `inner` is a field inside `outer` (`a.b` inside `a`), without making `${outer}.`. */
function isInside(inner: string, outer: string): boolean {
  return inner.length > outer.length && inner.charCodeAt(outer.length) === 46 /* . */ && inner.startsWith(outer);
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

/**
 * Whether a Date was ever stored in this process (cleaned, or read from a
 * datafile): until one is, no stored document holds one, and the embedded
 * store writes a document as plain JSON without first walking it for Dates
 * (serializeDoc). Stored documents are never changed in place, so every Date
 * in one came through cleanValue or a datafile.
 */
let datesSeen = false;

export function dateSeen(): void {
  datesSeen = true;
}

export function mayHoldDates(): boolean {
  return datesSeen;
}

function copyDate(value: Date): Date {
  datesSeen = true;
  return new Date(value.getTime());
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
  if (value instanceof Date) return copyDate(value);
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
  if (value instanceof Date) return copyDate(value);
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
  // One pass over the operators and their paths (every write of the store
  // comes here): for-in rather than entries, a path's `where` text only for an
  // error, and the paths kept for the check of overlaps below.
  let out: Record<string, PlainObject> | undefined;
  const paths: string[] = [];
  for (const op in update) {
    if (!UPDATE_OPERATORS.has(op)) throw new TypeError(`unsupported update operator ${show(op)}`);
    const operand = (update as PlainObject)[op];
    if (operand === undefined) continue;
    if (!isPlainObject(operand)) throw new TypeError(`${op} takes an object of field paths`);
    let kept: PlainObject | undefined;
    for (const path in operand) {
      const value = operand[path];
      checkPath(path, "update");
      if (path === "_id" || isInside(path, "_id")) throw new TypeError("an update cannot change _id");
      let stored: unknown;
      switch (op) {
        case "$set":
          if (value === undefined) continue;
          stored = cleanOperand(value, op, path, "");
          break;
        case "$unset":
          if (value !== "" && value !== true && value !== 1) throw new TypeError(`${op}.${path} takes "", true or 1`);
          stored = "";
          break;
        case "$inc":
          if (typeof value !== "number" || !Number.isFinite(value)) throw new TypeError(`${op}.${path} takes a finite number`);
          stored = value;
          break;
        case "$pull":
          if (!isScalar(value)) {
            throw new TypeError(`${op}.${path} takes a string, finite number, boolean or null (exact value)`);
          }
          stored = value;
          break;
        default: {
          // $addToSet and $push: only the `$each` form, so a value that is itself
          // an array is never mistaken for a list of values.
          if (!isPlainObject(value) || !onlyEach(value)) throw new TypeError(`${op}.${path} takes { $each: [...] }`);
          const each = value.$each as unknown[];
          if (each.length === 0) continue;
          stored = { $each: cleanOperand(each, op, path, ".$each") };
        }
      }
      kept ??= {};
      kept[path] = stored;
      paths.push(path);
    }
    if (kept !== undefined) (out ??= {})[op] = kept;
  }
  refuseOverlaps(paths);
  return out === undefined ? null : (out as Update);
}

/** An update's value cleaned (cleanValue), its path named only when it is refused. */
function cleanOperand(value: unknown, op: string, path: string, suffix: string): unknown {
  try {
    return cleanQuietly(value);
  } catch (error) {
    if (error !== REFUSED) throw error;
  }
  return cleanNamingPath(value, `${op}.${path}${suffix}`);
}

/** Whether an object's only own field is an array `$each`. */
function onlyEach(value: PlainObject): boolean {
  let fields = 0;
  for (const key in value) if (Object.prototype.hasOwnProperty.call(value, key)) fields += 1;
  return fields === 1 && Array.isArray(value.$each);
}

/** Paths of one update past which the overlap check sorts them rather than comparing each pair. */
const PAIRWISE_PATHS = 16;

/**
 * MongoDB rejects two operators on one path (or on a path and its parent),
 * NeDB would apply them in turn: refuse it everywhere. An update has a few
 * paths, compared pair by pair without a copy; many are looked up: each path,
 * and each of its parents, among the others.
 */
function refuseOverlaps(paths: string[]): void {
  if (paths.length <= PAIRWISE_PATHS) {
    for (let i = 1; i < paths.length; i += 1) {
      const current = paths[i]!;
      for (let j = 0; j < i; j += 1) {
        const previous = paths[j]!;
        if (current === previous || isInside(current, previous) || isInside(previous, current)) {
          const [low, high] = previous < current ? [previous, current] : [current, previous];
          throw new TypeError(`update touches ${low} and ${high} in one operation`);
        }
      }
    }
    return;
  }
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path)) throw new TypeError(`update touches ${path} and ${path} in one operation`);
    seen.add(path);
  }
  for (const path of paths) {
    for (let dot = path.indexOf("."); dot !== -1; dot = path.indexOf(".", dot + 1)) {
      const parent = path.slice(0, dot);
      if (seen.has(parent)) throw new TypeError(`update touches ${parent} and ${path} in one operation`);
    }
  }
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
