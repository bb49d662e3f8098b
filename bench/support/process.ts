import { readdirSync, readFileSync } from "node:fs";

/** Peak resident memory of a running process so far (Linux VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

/** CPU time a running process has used so far (user + system, every thread), in seconds. */
export function cpuSeconds(pid: number): number {
  // /proc/<pid>/stat: fields 14 and 15 (utime, stime) in clock ticks, after the
  // command name in parentheses (which may itself hold spaces).
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** Linux's USER_HZ, 100 on every architecture Node runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS = 100;

/**
 * CPU seconds of a process and its children so far: its own, its reaped
 * children's (cutime, cstime) and those of its children still running. For a
 * server that forks a process per connection (PostgreSQL's postmaster and
 * its backends), where the work is done in the children.
 */
export function treeCpuSeconds(pid: number): number {
  let total = cpuTicks(pid, true);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === pid) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[1]) === pid) total += cpuTicks(Number(entry), true);
    } catch {
      // gone meanwhile
    }
  }
  return total / CLOCK_TICKS;
}

function cpuTicks(pid: number, withChildren: boolean): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime, stime, then cutime, cstime (children waited for).
  return Number(fields[11]) + Number(fields[12]) + (withChildren ? Number(fields[13]) + Number(fields[14]) : 0);
}
