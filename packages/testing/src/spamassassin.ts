import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { installedProgram } from "./programs.js";

// SpamAssassin (Debian's `spamassassin`) scoring a message as a receiving
// server would, for deliverability tests: `spamassassin -t -L`, local rules
// only (no DNS, no network), with a home of its own per run so that nothing
// of the machine's user is read or written.

/** Debian's SpamAssassin; `SPAMASSASSIN_PATH` names another. */
export const DEFAULT_SPAMASSASSIN_PATH = "/usr/bin/spamassassin";

/**
 * The SpamAssassin the tests run: `SPAMASSASSIN_PATH`, else
 * /usr/bin/spamassassin. Throws, saying how to install it, when it is not
 * there (a test that needs it fails; it is never skipped).
 * scripts/spamassassin/install.sh (run by .ci/run) installs it the same way.
 */
export function spamAssassinPath(): string {
  return installedProgram({
    what: "SpamAssassin",
    variable: "SPAMASSASSIN_PATH",
    defaultPath: DEFAULT_SPAMASSASSIN_PATH,
    debianPackage: "spamassassin",
    neededBy: "the deliverability tests",
  });
}

export interface SpamReport {
  /** The message's score (SpamAssassin's threshold for spam is 5.0). */
  score: number;
  /** The rules that matched, by name (e.g. `HTML_FONT_LOW_CONTRAST`). */
  rules: string[];
  /** SpamAssassin's report, for a failing assertion's message. */
  report: string;
}

/** Scores a raw message (RFC 5322, as an SMTP server received it) with local rules only. */
export async function spamAssassinReport(raw: string): Promise<SpamReport> {
  const home = mkdtempSync(join(tmpdir(), "spamassassin-"));
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        spamAssassinPath(),
        ["-t", "-L"],
        { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home }, maxBuffer: 16 * 1024 * 1024, timeout: 50_000 },
        // -t exits 1 when the message scores as spam; its output is the answer either way.
        (err, stdout, stderr) => (stdout.includes("Content analysis details") ? resolve(stdout) : reject(new Error(`spamassassin failed: ${err?.message ?? ""}\n${stderr}`))),
      );
      child.stdin!.end(raw);
    });
    const report = output.slice(output.indexOf("Content analysis details"));
    const score = Number(/Content analysis details:\s+\((-?[\d.]+) points/.exec(report)?.[1]);
    const rules = [...report.matchAll(/^\s*-?[\d.]+\s+([A-Z0-9_]+)\s/gm)].map((m) => m[1]!);
    return { score, rules, report };
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}
