// The starts of "today" and "this month" in a time zone (IANA name), as UTC
// instants, from the platform's Intl data: no time-zone library.

/** Whether `zone` is a time zone this runtime knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The wall-clock fields of `instant` in `zone`. */
function wallClock(zone: string, instant: number): { year: number; month: number; day: number; hour: number; minute: number; second: number } {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(new Date(instant));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? "0");
  return { year: get("year"), month: get("month"), day: get("day"), hour: get("hour"), minute: get("minute"), second: get("second") };
}

/** How far `zone` is ahead of UTC at `instant`, in ms. */
function offsetAt(zone: string, instant: number): number {
  const w = wallClock(zone, instant);
  return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) - Math.floor(instant / 1000) * 1000;
}

/** The UTC instant of local midnight starting the given date in `zone` (the first instant of that day, across DST changes). */
function localMidnight(zone: string, year: number, month: number, day: number): number {
  const guess = Date.UTC(year, month - 1, day);
  // The offset at the guess, then at the result: right also when the offset changes in between.
  let instant = guess - offsetAt(zone, guess);
  instant = guess - offsetAt(zone, instant);
  return instant;
}

/** The starts of the day and of the month that `now` falls in, in `zone`. */
export function periodStarts(zone: string, now: number): { today: number; month: number } {
  const w = wallClock(zone, now);
  return { today: localMidnight(zone, w.year, w.month, w.day), month: localMidnight(zone, w.year, w.month, 1) };
}
