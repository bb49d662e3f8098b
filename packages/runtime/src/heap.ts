// V8's heap settings of every process the platform runs, from this one place:
// `npm start` (embedded/src/main.ts), each service alone (runService, the
// gateway's main.ts), and so the image's CMD, the Helm chart's command and the
// tests' and benchmarks' processes, none of which need Node flags of their own.
// bench/README.md ("Memory") has the measurements behind the values.
import { setFlagsFromString } from "node:v8";
import type { ServiceName } from "./catalog.js";

/**
 * How much V8 lets an old generation grow past what survived its last full
 * collection, in a service's own process: 100 caps it at 2 × (V8's own factor
 * goes up to 4 ×, which left delivery's old generation at 486 MB for 235 MB
 * live after a campaign).
 */
export const HEAP_GROWING_PERCENT = 100;

/**
 * The same for `npm start`, whose three isolates each keep a store's slots and
 * index keys in their old generation: 60 (1.6 ×). 50 took its peak at
 * 100,000 recipients from about 630 MB to about 530 while slots were objects;
 * with slots in typed arrays the live old generations are smaller and a
 * higher percent buys fewer mark-compacts (delivery marked its heap about 40
 * times a run at 50, 30 at 75). 75 peaked at 502–515 MB once sending
 * overlapped the audience's snapshot, at the 512 MB goal's edge; 60 at
 * 494–499 for CPU within the runs' spread (bench/README.md, "Slots in typed
 * arrays").
 */
export const EMBEDDED_HEAP_GROWING_PERCENT = 60;

/**
 * Applies a growing percent (HEAP_GROWING_PERCENT unless told) to this
 * process (every isolate in it: the flag is read at each collection, so it
 * takes effect from the next one, unlike the young generation's size, which
 * an isolate fixes when it is made). A `--heap-growing-percent` on the
 * command line wins.
 */
export function applyHeapSettings(percent: number = HEAP_GROWING_PERCENT, execArgv: readonly string[] = process.execArgv): void {
  if (execArgv.some((arg) => arg.startsWith("--heap-growing-percent") || arg.startsWith("--heap_growing_percent"))) return;
  setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/**
 * The young generation (MB) of a service `npm start` runs in a worker thread
 * (the Worker's `resourceLimits.maxYoungGenerationSizeMb`: three times the
 * semi-space), where it is not V8's default (48: 16 MB semi-spaces).
 * Delivery's thread, the one a campaign saturates, keeps 32 MB semi-spaces:
 * with the default it used about 7 % more CPU at 100,000 recipients, for no
 * less peak memory; elsewhere the default takes 55–85 MB off the peak at
 * 20,000 (bench/README.md, "Memory"). An isolate fixes this when it is made,
 * so a service alone has V8's default unless its command line says otherwise.
 */
export const THREAD_YOUNG_GENERATION_MB: Partial<Record<ServiceName, number>> = { delivery: 96 };
