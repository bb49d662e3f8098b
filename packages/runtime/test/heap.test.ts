import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { EMBEDDED_HEAP_GROWING_PERCENT, HEAP_GROWING_PERCENT } from "../src/heap";

// applyHeapSettings sets V8's heap growing factor in a running process (it is
// read at each collection), as `--heap-growing-percent` on the command line
// would, and leaves a command line's own value alone. Seen from outside: the
// largest heap of a process whose old generation fills with objects that die
// there (each lives through two scavenges) over a live set of about 30 MB.

const dist = join(__dirname, "..", "dist", "index.js");
const CHURN = `
const { getHeapStatistics } = require("node:v8");
if (process.env.APPLY === "1") require(${JSON.stringify(dist)}).applyHeapSettings(process.env.PERCENT ? Number(process.env.PERCENT) : undefined);
const live = [];
for (let i = 0; i < 5e5; i++) live.push({ a: i, b: "x" + i });
const ring = new Array(300000);
let largest = 0;
for (let i = 0; i < 4e6; i++) {
  ring[i % ring.length] = { a: i, b: [i] };
  if (i % 5000 === 0) largest = Math.max(largest, getHeapStatistics().total_heap_size);
}
process.stdout.write(String(Math.round(largest / 1048576)));
`;

/**
 * The largest heap (MB) of the churn above, run with `flags`, calling
 * applyHeapSettings first when `apply` (with `percent` when given).
 */
function largestHeapMb(flags: string[], apply: boolean, percent?: number): number {
  const env = { ...process.env, APPLY: apply ? "1" : "0", PERCENT: percent === undefined ? "" : String(percent) };
  // --single-threaded-gc: marking on the churn's own thread, so the heap a collection leaves does not depend on how
  // much CPU V8's helper threads got on a busy machine (with them, the first test once found the factor not applied).
  // 1 MB semi-spaces: the young generation, which the factor does not size, does not dilute the old one's room.
  return Number(execFileSync(process.execPath, ["--single-threaded-gc", "--max-semi-space-size=1", ...flags, "-e", CHURN], { env, encoding: "utf8" }));
}

describe("applyHeapSettings", () => {
  it("caps the old generation's growth as the command-line flag does, and a command line's own value wins", () => {
    const flagged = largestHeapMb(["--heap-growing-percent=100"], false);
    const applied = largestHeapMb([], true);
    // The same factor fixed either way: the same collections, so nearly the same largest heap.
    expect(Math.abs(applied - flagged) / flagged).toBeLessThan(0.15);

    const own = largestHeapMb(["--heap-growing-percent=10"], false);
    const ownApplied = largestHeapMb(["--heap-growing-percent=10"], true);
    expect(own).toBeLessThan(flagged * 0.9);
    expect(Math.abs(ownApplied - own) / own).toBeLessThan(0.15);
  });

  it("applies the embedded platform's lower percent as the flag would, for a smaller heap than a service's own process", () => {
    const flagged = largestHeapMb([`--heap-growing-percent=${EMBEDDED_HEAP_GROWING_PERCENT}`], false);
    const applied = largestHeapMb([], true, EMBEDDED_HEAP_GROWING_PERCENT);
    expect(Math.abs(applied - flagged) / flagged).toBeLessThan(0.15);
    expect(EMBEDDED_HEAP_GROWING_PERCENT).toBeLessThan(HEAP_GROWING_PERCENT);
    // About 59 MB against 72-78 for this churn at 60 (1.6 times the old generation's live size against 2 times).
    expect(applied).toBeLessThan(largestHeapMb([], true) * 0.95);
  });
});
