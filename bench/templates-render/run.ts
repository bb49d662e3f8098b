// Template rendering benchmark: what a message costs once its template version
// is compiled (render throughput per core), and what compiling a version costs
// (MJML validation + compile, done once per version on write).
//
//   npm run bench:templates-render -w @emailsvc/bench   (writes bench/results/templates-render.json)
//
// Fixtures: a 60-line MJML newsletter with 5 variables (newsletter.ts), and the
// heaviest template TEMPLATE_LIMITS let through (templateAtLimits of
// @emailsvc/render): what one version and one message can cost at most. No
// server, no I/O: the functions the templates service runs on write and that
// delivery runs per message, called in a loop. Each step runs for
// BENCH_SECONDS (default 5) after a warm-up; "per core" is one thread; the
// parallel step runs one worker thread per core to show how it scales.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { analyzeTemplate, compileRenderer, handlebarsBounds, htmlBounds, htmlToText, RenderLimitError, TEMPLATE_LIMITS, templateAtLimits, type Renderer } from "@emailsvc/render";
import { compileMjml, compileTemplateBody } from "@emailsvc/templates";
import { NEWSLETTER_MJML, NEWSLETTER_SUBJECT } from "./newsletter.js";

const repo = join(__dirname, "..", "..", ".."); // bench/dist/templates-render -> repo root
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

interface Cell {
  step: string;
  threads: number;
  iterations: number;
  seconds: number;
  per_second: number;
  p50_ms: number | null;
  p99_ms: number | null;
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));

/** Runs `op` back to back for `seconds`, timing each call. */
async function measure(step: string, seconds: number, op: (i: number) => unknown | Promise<unknown>): Promise<Cell> {
  const warmUntil = Date.now() + Math.min(1000, seconds * 200);
  for (let i = 0; Date.now() < warmUntil; i++) await op(i);
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(seconds * 1e9));
  let i = 0;
  for (;;) {
    const t0 = process.hrtime.bigint();
    if (t0 >= deadline) break;
    await op(i++);
    latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    step,
    threads: 1,
    iterations: latencies.length,
    seconds: round(elapsed, 2),
    per_second: Math.round(latencies.length / elapsed),
    p50_ms: round(percentile(latencies, 50), 4),
    p99_ms: round(percentile(latencies, 99), 4),
  };
}

async function compiledNewsletter(): Promise<{ html: string; variables: string[] }> {
  const result = await compileMjml(NEWSLETTER_MJML);
  if (!result.ok) throw new Error(`fixture does not compile: ${JSON.stringify(result.problems)}`);
  const variables = [
    ...new Set([
      ...analyzeTemplate(NEWSLETTER_SUBJECT, { allowTripleStash: true }).variables,
      ...analyzeTemplate(result.html, { allowTripleStash: false }).variables,
    ]),
  ].sort();
  return { html: result.html, variables };
}

/** Per-message variables: different values each time, as in a real campaign. */
function variablesFor(i: number): Record<string, unknown> {
  return {
    name: `Reader ${i} <r${i}@example.com>`,
    issue: 100 + (i % 50),
    headline: `Five things we learned in week ${i % 52}`,
    cta_url: `https://example.com/issues/${100 + (i % 50)}?utm_source=email&s=${i}`,
    unsubscribe_url: `https://prefs.example.com/preferences?token=t${i}`,
  };
}

function renderLoop(render: Renderer, seconds: number): { messages: number; seconds: number } {
  const started = process.hrtime.bigint();
  const deadline = started + BigInt(Math.round(seconds * 1e9));
  let messages = 0;
  while (process.hrtime.bigint() < deadline) {
    for (let k = 0; k < 20; k++) render(variablesFor(messages++));
  }
  return { messages, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

async function worker(): Promise<void> {
  const { html, variables } = await compiledNewsletter();
  const render = compileRenderer({ subject: NEWSLETTER_SUBJECT, html, variables });
  renderLoop(render, 0.5); // warm-up
  parentPort!.postMessage(renderLoop(render, (workerData as { seconds: number }).seconds));
}

async function parallel(threads: number): Promise<Cell> {
  const results = await Promise.all(
    Array.from(
      { length: threads },
      () =>
        new Promise<{ messages: number; seconds: number }>((resolve, reject) => {
          const w = new Worker(__filename, { workerData: { seconds: SECONDS } });
          w.once("message", resolve);
          w.once("error", reject);
        }),
    ),
  );
  const messages = results.reduce((n, r) => n + r.messages, 0);
  const seconds = Math.max(...results.map((r) => r.seconds));
  return {
    step: `render message (subject + HTML + text), ${threads} worker threads`,
    threads,
    iterations: messages,
    seconds: round(seconds, 2),
    per_second: Math.round(messages / seconds),
    p50_ms: null,
    p99_ms: null,
  };
}

async function main(): Promise<void> {
  const loadavg = readFileSync("/proc/loadavg", "utf8").trim();
  const { html, variables } = await compiledNewsletter();
  const cells: Cell[] = [];

  // Once per version, on write (the service also checks the Handlebars of source and result).
  cells.push(await measure("compile version: MJML check + validate + compile", SECONDS, () => compileMjml(NEWSLETTER_MJML)));
  cells.push(await measure("compile version: + limits and Handlebars checks of source and HTML (the write path)", SECONDS, () => compileTemplateBody(NEWSLETTER_MJML)));
  // Once per version per process (delivery's renderer cache).
  cells.push(await measure("compile renderer (Handlebars, per version per process)", SECONDS, () => compileRenderer({ subject: NEWSLETTER_SUBJECT, html, variables })));

  // Per message.
  const render = compileRenderer({ subject: NEWSLETTER_SUBJECT, html, variables });
  cells.push(await measure("render message (subject + HTML + text), 1 thread", SECONDS, (i) => render(variablesFor(i))));
  const rendered = render(variablesFor(1)).html;
  cells.push(await measure("  of which: text part (html-to-text)", SECONDS, () => htmlToText(rendered)));

  const threads = cpus().length;
  cells.push(await parallel(threads));

  // At the limits: the heaviest version, and its heaviest message (fewer rounds: each takes tens of ms).
  const heaviest = templateAtLimits();
  const heavyHtml = `<!doctype html><html><head><title>x</title></head><body>${heaviest.fragment}</body></html>`;
  cells.push(await measure("at the limits: check the version's bounds (iterative scans)", SECONDS, () => [handlebarsBounds(heavyHtml), htmlBounds(heavyHtml)]));
  cells.push(await measure("at the limits: compile renderer (per version per process)", SECONDS, () => compileRenderer({ subject: heaviest.subject, html: heavyHtml })));
  const heavy = compileRenderer({ subject: heaviest.subject, html: heavyHtml });
  cells.push(await measure("at the limits: render message", SECONDS, () => heavy(heaviest.variables)));
  const heavyMessage = heavy(heaviest.variables);

  // Variable-driven worst cases: each stops at its RENDER_LIMITS budget (the
  // email fails, the preview is a 413); what matters is how long that takes.
  const page = (body: string) => `<!doctype html><html><body>${body}</body></html>`;
  const stopped = (render: Renderer, variables: Record<string, unknown>) => () => {
    try {
      render(variables);
    } catch (err) {
      if (err instanceof RenderLimitError) return;
      throw err;
    }
    throw new Error("expected the budget to stop this message");
  };
  const list = Array.from({ length: 1000 }, (_, i) => i);
  const cube = compileRenderer({ subject: "s", html: page("{{#each a}}{{#each @root.a}}{{#each @root.a}}<i>{{this}}</i>{{/each}}{{/each}}{{/each}}") });
  cells.push(await measure("worst case: nested each over 1,000-item lists, stopped at 10,000 iterations", SECONDS, stopped(cube, { a: list })));
  const flat = compileRenderer({ subject: "s", html: page("{{x}}".repeat(TEMPLATE_LIMITS.expressions - 1)) });
  cells.push(await measure("worst case: 999 {{x}} of a 60 KiB value, stopped at 512 Ki characters", SECONDS, stopped(flat, { x: "<".repeat(60 * 1024) })));
  const busy = compileRenderer({ subject: "s", html: page(`{{#each items}}${"{{x}}".repeat(TEMPLATE_LIMITS.expressions - 3)}{{/each}}`) });
  cells.push(await measure("worst case: each of 997 {{x}} over 10,000 items, stopped at 100,000 evaluations", SECONDS, stopped(busy, { items: Array.from({ length: 10_000 }, (_, i) => i) })));
  // The template of issue 6: refused by the iterative scan, without parsing.
  const deep = "{{#if x}}".repeat(3000) + "deep" + "{{/if}}".repeat(3000);
  cells.push(await measure("refuse the 3,000-deep template (48 KB) by the scan", SECONDS, () => handlebarsBounds(deep)));

  const sample = render(variablesFor(7));
  const machine = {
    cpus: threads,
    cpu: cpus()[0]?.model ?? "unknown",
    node: process.version,
    date: new Date().toISOString(),
    loadavg_start: loadavg,
  };
  const fixture = {
    mjml_lines: NEWSLETTER_MJML.split("\n").length,
    mjml_bytes: Buffer.byteLength(NEWSLETTER_MJML),
    compiled_html_bytes: Buffer.byteLength(html),
    rendered_html_bytes: Buffer.byteLength(sample.html),
    text_bytes: Buffer.byteLength(sample.text),
    variables,
    at_limits: {
      html_chars: heavyHtml.length,
      rendered_chars: heavyMessage.html.length + heavyMessage.subject.length,
      text_chars: heavyMessage.text.length,
    },
  };
  const resultsDir = join(repo, "bench", "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, "templates-render.json"), JSON.stringify({ machine, seconds_per_cell: SECONDS, fixture, cells }, null, 2) + "\n");

  console.log(JSON.stringify(machine));
  console.log(JSON.stringify(fixture));
  console.log("| step | threads | per second | p50 ms | p99 ms |");
  console.log("|---|---:|---:|---:|---:|");
  for (const c of cells) {
    console.log(`| ${c.step.trim()} | ${c.threads} | ${c.per_second} | ${c.p50_ms ?? "—"} | ${c.p99_ms ?? "—"} |`);
  }
}

if (isMainThread) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else {
  worker().catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
