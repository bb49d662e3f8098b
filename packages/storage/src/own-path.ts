// Reading a field path as MongoDB does: own fields of objects only. NeDB's
// getDotValue reads `obj[name]`, which also finds what objects inherit
// (`constructor`, `toString`, `__defineGetter__` …), a string's characters and
// `length`, a Date's methods. So a condition on `metadata.constructor` matched
// every document (`$exists: true`) in the embedded store and none in MongoDB
// (issue 16, defect 4). A path none of whose segments could be found that way
// reads the same either way and keeps NeDB's faster getDotValue; the others
// are read here (embedded.ts matches them through this, memory-table.ts keys
// and sorts by it).

import { isPlainObject } from "./checks.js";

/**
 * Names a stored value (object, array, string, number, boolean, Date) answers
 * without holding them: everything on the prototypes of those kinds, and a
 * string's `length`. Our documents hold nothing else (checks.ts).
 */
const INHERITED = new Set<string>(
  [Object.prototype, Array.prototype, String.prototype, Number.prototype, Boolean.prototype, Date.prototype].flatMap((proto) =>
    Object.getOwnPropertyNames(proto),
  ),
);

const NUMERIC = /^\d+$/;

/**
 * Whether reading `path` with NeDB's getDotValue could find something that is
 * no field of the document: a segment named like an inherited property, or a
 * number (a string's character).
 */
export function reachesInherited(path: string): boolean {
  // Most paths are one field name: no split (an array and a string) for it.
  if (!path.includes(".")) return INHERITED.has(path) || NUMERIC.test(path);
  for (const segment of path.split(".")) if (INHERITED.has(segment) || NUMERIC.test(segment)) return true;
  return false;
}

/**
 * The value at `path` through own fields only, otherwise as getDotValue reads
 * it: through an array, a numeric segment picks an element and any other
 * takes each element's value at the rest of the path (so conditions hold when
 * an element matches; when no element has it, the path names nothing); a
 * string, number, boolean, null or Date has no fields.
 */
export function ownPathValue(doc: unknown, path: string): unknown {
  return readFrom(doc, path.split("."), 0);
}

function readFrom(value: unknown, parts: readonly string[], from: number): unknown {
  let current = value;
  for (let i = from; i < parts.length; i += 1) {
    const part = parts[i]!;
    if (Array.isArray(current)) {
      if (NUMERIC.test(part)) {
        current = current[Number(part)];
        continue;
      }
      const rest = i;
      const values = current.map((element) => readFrom(element, parts, rest));
      // No element has the field (or there is none): the path names nothing, as in MongoDB.
      return values.some((element) => element !== undefined) ? values : undefined;
    }
    if (!isPlainObject(current) || !Object.prototype.hasOwnProperty.call(current, part)) return undefined;
    current = current[part];
  }
  return current;
}
