// Event codec benchmark: the cost of encoding and decoding the two events every
// campaign recipient makes (email.send.requested, email.status), through
// reflection (toBinary, fromBinary) and through the compiled codecs the event
// registry uses (packages/events/src/codec), and of the registry's whole
// encodeEvent and decodeEvent (meta, key, headers, checks) on top.
//
//   npm run bench:codec -w @emailsvc/bench     (≈ 1 min; writes results/codec.json and the README table)
//
// The two ways run in alternation (A B A B …, ROUNDS rounds of OPS calls each)
// and the table gives the median of the rounds, so that a neighbour's burst on
// a shared machine falls on both.

import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { decodeEvent, encodeEvent, messageCodec, TOPICS, type EventOrigin, type ReceivedEvent, type Topic } from "@emailsvc/events";
import { newId } from "@emailsvc/ids";
import { describeMachine } from "../support/machine.js";
import { writeResultsBlock } from "../support/readme.js";

const benchRoot = path.join(__dirname, "..", ".."); // bench/dist/codec -> bench
const ROUNDS = Number(process.env.CODEC_BENCH_ROUNDS ?? 9);
const OPS = Number(process.env.CODEC_BENCH_OPS ?? 50_000);

interface Row {
  event: string;
  operation: string;
  bytes: number;
  reflection_ns: number | null;
  compiled_ns: number;
}

let sink: unknown;

/** Nanoseconds per call of each function, median of rounds run in alternation. */
function race(fns: Array<() => unknown>): number[] {
  for (const fn of fns) for (let i = 0; i < OPS / 5; i++) sink = fn();
  const samples: number[][] = fns.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    fns.forEach((fn, k) => {
      const started = process.hrtime.bigint();
      for (let i = 0; i < OPS; i++) sink = fn();
      samples[k]!.push(Number(process.hrtime.bigint() - started) / OPS);
    });
  }
  return samples.map((s) => Math.round(s.sort((a, b) => a - b)[Math.floor(s.length / 2)]!));
}

function origin(): EventOrigin {
  return { eventId: newId("evt"), tenant: `${newId("acc")}:live`, occurredAt: Date.now() };
}

function rows<T extends Topic>(topic: T, body: Parameters<typeof encodeEvent<T>>[2]): Row[] {
  const schema = TOPICS[topic].schema as DescMessage;
  const codec = messageCodec(schema);
  if (codec.reflection !== undefined) throw new Error(`${topic} is not compiled: ${codec.reflection}`);
  const from = origin();
  const { event } = encodeEvent(topic, from, body);
  const message = fromBinary(schema, event.value);
  const received: ReceivedEvent = { topic, key: event.key, value: event.value, headers: event.headers ?? {} };
  const [encodeReflection, encodeCompiled] = race([() => toBinary(schema, message), () => codec.encode(message)]);
  const [decodeReflection, decodeCompiled] = race([() => fromBinary(schema, event.value), () => codec.decode(event.value)]);
  const [encodeEventNs, decodeEventNs] = race([() => encodeEvent(topic, from, body), () => decodeEvent(received)]);
  const bytes = event.value.length;
  return [
    { event: topic, operation: "encode", bytes, reflection_ns: encodeReflection!, compiled_ns: encodeCompiled! },
    { event: topic, operation: "decode", bytes, reflection_ns: decodeReflection!, compiled_ns: decodeCompiled! },
    { event: topic, operation: "encodeEvent (meta, key, headers, encode)", bytes, reflection_ns: null, compiled_ns: encodeEventNs! },
    { event: topic, operation: "decodeEvent (decode, checks)", bytes, reflection_ns: null, compiled_ns: decodeEventNs! },
  ];
}

function main(): void {
  const machine = describeMachine();
  console.log(JSON.stringify(machine));
  const campaign = { emailId: newId("eml"), campaignId: newId("cmp"), subscriberId: newId("sub"), templateId: newId("tpl"), templateVersion: 3 };
  const results = [
    ...rows("email.send.requested", campaign),
    ...rows("email.status", { emailId: campaign.emailId, status: "sent", campaignId: campaign.campaignId, subscriberId: campaign.subscriberId }),
  ];
  for (const row of results) console.log(JSON.stringify(row));
  const resultsDir = path.join(benchRoot, "results");
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, "codec.json"), JSON.stringify({ machine, rounds: ROUNDS, ops_per_round: OPS, rows: results }, null, 2) + "\n");
  const header =
    `Measured ${machine.date.slice(0, 16).replace("T", " ")} UTC on ${machine.cpus} cores (${machine.cpu}), Node ${machine.node}, ` +
    `load average ${machine.loadavg_start.split(" ").slice(0, 3).join(" ")} at start; median of ${ROUNDS} alternating rounds of ${OPS.toLocaleString("en")} calls.`;
  const table = [
    "| event | operation | bytes | reflection ns | compiled ns | reflection / compiled |",
    "|---|---|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${r.event} | ${r.operation} | ${r.bytes} | ${r.reflection_ns?.toLocaleString("en") ?? "—"} | ${r.compiled_ns.toLocaleString("en")} | ${r.reflection_ns === null ? "—" : (r.reflection_ns / r.compiled_ns).toFixed(1) + "×"} |`,
    ),
  ].join("\n");
  writeResultsBlock(path.join(benchRoot, "README.md"), "codec", "Event codecs", `${header}\n\n${table}`);
  console.log("updated README.md");
  if (sink === Symbol()) console.log("");
}

main();
