import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { EMBEDDED_HEAP_GROWING_PERCENT, HEAP_GROWING_PERCENT } from "../src/heap";

// applyHeapSettings sets V8's heap growing factor in a running process (it is
// read at each collection), as `--heap-growing-percent` on the command line
// would, and leaves a command line's own value alone. Seen from outside: the
// factor V8 itself reports (--trace-gc-verbose) each time it sets the old
// generation's next limit, in a process whose old generation fills with
// objects that die there (each lives through two scavenges) over a live set of
// about 30 MB. The factor, not the largest heap: how far a heap gets between
// collections moves with the machine's load (a run on a busy CI machine was 19 %
// off the same factor's other run), the factor does not.

const dist = join(__dirname, "..", "dist", "index.js");
const CHURN = `
if (process.env.APPLY === "1") require(${JSON.stringify(dist)}).applyHeapSettings(process.env.PERCENT ? Number(process.env.PERCENT) : undefined);
const live = [];
for (let i = 0; i < 5e5; i++) live.push({ a: i, b: "x" + i });
const ring = new Array(300000);
for (let i = 0; i < 4e6; i++) ring[i % ring.length] = { a: i, b: [i] };
`;

/**
 * The factors V8 set the old generation's limits by in the churn above, run
 * with `flags`, calling applyHeapSettings first when `apply` (with `percent`
 * when given): from its lines "[HeapController] Limit: old size: … KB, new
 * limit: … KB (1.6)".
 */
function limitFactors(flags: string[], apply: boolean, percent?: number): number[] {
  const env = { ...process.env, APPLY: apply ? "1" : "0", PERCENT: percent === undefined ? "" : String(percent) };
  // 1 MB semi-spaces: objects reach the old generation soon, so it is collected several times.
  const trace = execFileSync(process.execPath, ["--trace-gc-verbose", "--max-semi-space-size=1", ...flags, "-e", CHURN], { env, encoding: "utf8", maxBuffer: 64 << 20 });
  const factors = [...trace.matchAll(/\[HeapController\] Limit: .*\((\d+(?:\.\d+)?)\)$/gm)].map((match) => Number(match[1]));
  expect(factors.length).toBeGreaterThan(2);
  return factors;
}

/** The factor a growing percent gives (V8 prints it to one decimal). */
const factorOf = (percent: number) => Math.round((1 + percent / 100) * 10) / 10;

describe("applyHeapSettings", () => {
  it("sets the old generation's growth as the command-line flag does, and a command line's own value wins", () => {
    // V8's own factor here, for contrast: larger than the one applied.
    expect(Math.max(...limitFactors([], false))).toBeGreaterThan(factorOf(HEAP_GROWING_PERCENT));

    expect(new Set(limitFactors([`--heap-growing-percent=${HEAP_GROWING_PERCENT}`], false))).toEqual(new Set([factorOf(HEAP_GROWING_PERCENT)]));
    expect(new Set(limitFactors([], true))).toEqual(new Set([factorOf(HEAP_GROWING_PERCENT)]));
    expect(new Set(limitFactors(["--heap-growing-percent=10"], true))).toEqual(new Set([factorOf(10)]));
  });

  it("applies the embedded platform's lower percent as the flag would", () => {
    expect(EMBEDDED_HEAP_GROWING_PERCENT).toBeLessThan(HEAP_GROWING_PERCENT);
    expect(new Set(limitFactors([], true, EMBEDDED_HEAP_GROWING_PERCENT))).toEqual(new Set([factorOf(EMBEDDED_HEAP_GROWING_PERCENT)]));
  });
});
