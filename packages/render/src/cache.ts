import { compileRenderer, TemplateRejectedError, type CompileRenderer, type CompiledContent, type Renderer } from "./renderer.js";

/**
 * A compiled version in the cache: its renderer, or the reason it cannot be
 * rendered (remembered as well, so that a rejected version is not compiled
 * again for every message). `value` is what the caller keeps with it.
 */
export type PreparedTemplate<V> =
  | { value: V; renderer: Renderer; rejected?: undefined }
  | { value: V; renderer?: undefined; rejected: TemplateRejectedError };

export interface RendererCacheOptions {
  /** Versions kept; default 500. */
  maxEntries?: number;
  /** Sum of subject and HTML lengths (UTF-16 units) kept; default 64 Mi. */
  maxChars?: number;
  /** Default compileRenderer; tests may pass another. */
  compile?: CompileRenderer;
}

/** What a remembered rejection is counted as against maxChars. */
const REJECTED_CHARS = 1024;

/**
 * A bounded LRU of compiled versions, so that a version is compiled once per
 * process however many messages use it — and a version that cannot be
 * rendered is found out once too. Bounded by entries and by the size of the
 * templates held. Key it by something immutable (template id and version,
 * never a slug): versions never change, so entries never go stale.
 */
export class RendererCache<V = undefined> {
  private readonly entries = new Map<string, { prepared: PreparedTemplate<V>; chars: number }>();
  private chars = 0;
  readonly maxEntries: number;
  readonly maxChars: number;
  private readonly compile: CompileRenderer;

  constructor(options: RendererCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? 500;
    this.maxChars = options.maxChars ?? 64 * 1024 * 1024;
    this.compile = options.compile ?? compileRenderer;
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) throw new RangeError("maxEntries must be a positive integer");
    if (!(this.maxChars > 0)) throw new RangeError("maxChars must be positive");
  }

  get size(): number {
    return this.entries.size;
  }

  /** The entry cached under `key`, if any (and marks it most recently used). */
  get(key: string): PreparedTemplate<V> | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    // Map keeps insertion order: re-inserting marks the entry most recently used.
    this.entries.delete(key);
    this.entries.set(key, hit);
    return hit.prepared;
  }

  /**
   * The entry for `key`, compiling `content` the first time (or after
   * eviction). A TemplateRejectedError is kept as the entry's `rejected`;
   * any other error of the compile is thrown and nothing is kept.
   */
  prepare(key: string, content: CompiledContent, value: V): PreparedTemplate<V> {
    const hit = this.get(key);
    if (hit) return hit;
    let prepared: PreparedTemplate<V>;
    let chars: number;
    try {
      prepared = { value, renderer: this.compile(content) };
      chars = content.subject.length + content.html.length;
    } catch (err) {
      if (!(err instanceof TemplateRejectedError)) throw err;
      prepared = { value, rejected: err };
      chars = REJECTED_CHARS;
    }
    this.entries.set(key, { prepared, chars });
    this.chars += chars;
    // Evict least recently used entries, but never the one just added.
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.chars <= this.maxChars) break;
      if (oldest === key) break;
      this.entries.delete(oldest);
      this.chars -= entry.chars;
    }
    return prepared;
  }

  clear(): void {
    this.entries.clear();
    this.chars = 0;
  }
}
