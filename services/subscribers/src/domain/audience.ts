import { AppError, invalid, type Violation } from "@emailsvc/errors";
import { isId } from "@emailsvc/ids";
import { isMetadataKey, LIMITS, METADATA_KEY_RULE, type MetadataValue } from "./subscriber.js";
import { tagKey, validateTagName } from "./tag.js";

// Pure rules of an audience filter (AudienceService): its shape and bounds,
// checked before any I/O. Which tag names exist is the use case's question.

export const AUDIENCE_LIMITS = {
  tagsPerList: LIMITS.tagsPerRequest,
  metadataConditions: 20,
  inValues: 100,
} as const;

/** ListAudience's page size (pageLimit's bounds): ids only, so far larger pages than the REST lists'. */
export const AUDIENCE_PAGE = { defaultLimit: 1000, maxLimit: 5000 } as const;

export type Match = "any" | "all";

/** A condition on one metadata key, as the rpc layer hands it over (values unchecked). */
export type MetadataConditionInput =
  | { key: string; kind: "equals"; value: unknown }
  | { key: string; kind: "in"; values: unknown[] }
  | { key: string; kind: "exists"; exists: boolean }
  | { key: string; kind: "none" };

export interface AudienceFilterInput {
  includeTags: readonly unknown[];
  /** undefined: a value the contract does not define. */
  match: Match | undefined;
  excludeTags: readonly unknown[];
  metadata: readonly MetadataConditionInput[];
}

export type MetadataCondition =
  | { key: string; kind: "equals"; value: MetadataValue }
  | { key: string; kind: "in"; values: MetadataValue[] }
  | { key: string; kind: "exists"; exists: boolean };

/** A tag name of a filter with where it was given (for the violations naming it). */
export interface TagRef {
  name: string;
  /** The lower-cased name tags are unique and found by. */
  key: string;
  field: string;
}

export interface AudienceFilter {
  include: TagRef[];
  match: Match;
  exclude: TagRef[];
  metadata: MetadataCondition[];
}

/**
 * Checks a filter's shape and bounds, collecting every violation (field paths
 * as in the request: `filter.include_tags[2]`, `filter.metadata[0].in[1]`), and
 * throws one INVALID_ARGUMENT naming them all.
 */
export function validateAudienceFilter(input: AudienceFilterInput | undefined): AudienceFilter {
  if (input === undefined) {
    throw invalid("filter is required (an empty filter means every active subscriber)", [
      { field: "filter", description: "is required" },
    ]);
  }
  const violations: Violation[] = [];
  const include = tagRefs(input.includeTags, "filter.include_tags", violations);
  const exclude = tagRefs(input.excludeTags, "filter.exclude_tags", violations);
  if (input.match === undefined) {
    violations.push({ field: "filter.match", description: "must be MATCH_ANY or MATCH_ALL (unspecified means any)" });
  }
  const metadata = metadataConditions(input.metadata, violations);
  if (violations.length > 0) throw invalid("audience filter is invalid", violations);
  return { include, match: input.match ?? "any", exclude, metadata };
}

function tagRefs(raw: readonly unknown[], field: string, violations: Violation[]): TagRef[] {
  if (raw.length > AUDIENCE_LIMITS.tagsPerList) {
    violations.push({ field, description: `at most ${AUDIENCE_LIMITS.tagsPerList} tags` });
    return [];
  }
  const refs: TagRef[] = [];
  raw.forEach((value, i) => {
    const name = collect(violations, () => validateTagName(value, `${field}[${i}]`));
    if (name !== undefined) refs.push({ name, key: tagKey(name), field: `${field}[${i}]` });
  });
  return refs;
}

function metadataConditions(raw: readonly MetadataConditionInput[], violations: Violation[]): MetadataCondition[] {
  if (raw.length > AUDIENCE_LIMITS.metadataConditions) {
    violations.push({ field: "filter.metadata", description: `at most ${AUDIENCE_LIMITS.metadataConditions} conditions` });
    return [];
  }
  const conditions: MetadataCondition[] = [];
  const firstOfKey = new Map<string, number>();
  raw.forEach((c, i) => {
    const field = `filter.metadata[${i}]`;
    const before = violations.length;
    if (!isMetadataKey(c.key)) {
      violations.push({ field: `${field}.key`, description: METADATA_KEY_RULE });
    } else if (firstOfKey.has(c.key)) {
      // Conditions are ANDed: two on one key repeat or contradict each other.
      violations.push({ field: `${field}.key`, description: `"${c.key}" already has a condition (filter.metadata[${firstOfKey.get(c.key)}]); give one per key` });
    } else {
      firstOfKey.set(c.key, i);
    }
    switch (c.kind) {
      case "none":
        violations.push({ field, description: "needs one of equals, in or exists" });
        break;
      case "exists":
        if (violations.length === before) conditions.push({ key: c.key, kind: "exists", exists: c.exists });
        break;
      case "equals": {
        const value = scalar(c.value, `${field}.equals`, violations);
        if (violations.length === before) conditions.push({ key: c.key, kind: "equals", value: value! });
        break;
      }
      case "in": {
        if (c.values.length === 0 || c.values.length > AUDIENCE_LIMITS.inValues) {
          violations.push({ field: `${field}.in`, description: `needs 1-${AUDIENCE_LIMITS.inValues} values` });
          break;
        }
        const values = c.values.map((v, j) => scalar(v, `${field}.in[${j}]`, violations));
        if (violations.length === before) conditions.push({ key: c.key, kind: "in", values: values as MetadataValue[] });
        break;
      }
    }
  });
  return conditions;
}

/** A value a metadata value can equal: what metadata holds (string ≤ 500, finite number, boolean). */
function scalar(value: unknown, field: string, violations: Violation[]): MetadataValue | undefined {
  if (typeof value === "string") {
    if (value.length <= LIMITS.metadataStringLength) return value;
    violations.push({ field, description: `strings are at most ${LIMITS.metadataStringLength} characters` });
  } else if (typeof value === "number") {
    if (Number.isFinite(value)) return value;
    violations.push({ field, description: "must be a finite number" });
  } else if (typeof value === "boolean") {
    return value;
  } else if (value === null) {
    violations.push({ field, description: "null is no metadata value; to match a missing key use exists: false" });
  } else {
    violations.push({ field, description: "must be a string, number or boolean (metadata holds no lists or objects)" });
  }
  return undefined;
}

/** Runs a check that throws an AppError with field violations, keeping its violations instead. */
function collect<T>(violations: Violation[], check: () => T): T | undefined {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof AppError) || !err.extra.fieldViolations?.length) throw err;
    violations.push(...err.extra.fieldViolations);
    return undefined;
  }
}

/** "" (from the start) or a subscriber id; it need not exist any more. */
export function validateAfter(after: string): string {
  if (after !== "" && !isId("sub", after)) {
    throw invalid("after_subscriber_id is not a subscriber id", [
      { field: "after_subscriber_id", description: "must be empty or a subscriber id (sub_…)" },
    ]);
  }
  return after;
}

/** INVALID_ARGUMENT `unknown_tags`, one violation per name that is no tag of the tenant. */
export function unknownTags(refs: TagRef[]): AppError {
  const names = [...new Set(refs.map((r) => r.name))];
  return new AppError("invalid", "unknown_tags", `unknown tags: ${names.map((n) => JSON.stringify(n)).join(", ")}`, {
    fieldViolations: refs.map((r) => ({ field: r.field, description: `no tag named ${JSON.stringify(r.name)}` })),
  });
}
