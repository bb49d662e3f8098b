import { t } from "../../i18n";

export const DELAY_UNITS = [
  { unit: "minutes", seconds: 60 },
  { unit: "hours", seconds: 3600 },
  { unit: "days", seconds: 86400 },
] as const;
export type DelayUnit = (typeof DELAY_UNITS)[number]["unit"];

/** A delay in the largest unit that divides it (the form's amount and unit). */
export function splitDelay(seconds: number): { amount: number; unit: DelayUnit } {
  for (const u of [...DELAY_UNITS].reverse()) {
    if (seconds > 0 && seconds % u.seconds === 0) return { amount: seconds / u.seconds, unit: u.unit };
  }
  return { amount: Math.round(seconds / 60), unit: "minutes" };
}

export function delaySeconds(amount: number, unit: DelayUnit): number {
  return amount * DELAY_UNITS.find((u) => u.unit === unit)!.seconds;
}

export function formatDelay(seconds: number): string {
  if (seconds === 0) return t("triggers.immediately");
  if (seconds % 60 !== 0) return t("triggers.delay.seconds", { count: seconds });
  const { amount, unit } = splitDelay(seconds);
  return t(`triggers.delay.${unit}`, { count: amount });
}
