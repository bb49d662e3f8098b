import { readFileSync } from "node:fs";
import { cpus } from "node:os";

/** The machine a benchmark ran on, recorded with its results (the figures only compare within one). */
export interface Machine {
  cpus: number;
  cpu: string;
  node: string;
  date: string;
  loadavg_start: string;
}

export function describeMachine(): Machine {
  return {
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    node: process.version,
    date: new Date().toISOString(),
    loadavg_start: readFileSync("/proc/loadavg", "utf8").trim(),
  };
}
