import { isIP } from "node:net";

// The addresses links in mail are built on: PUBLIC_API_URL (one-click
// unsubscribe, on the gateway) and PREFERENCES_URL (the preference page).
// Both default to this machine (`npm start`), which is right on a laptop and
// wrong for anyone who receives the mail: the links lead nowhere, and
// without https there is no RFC 8058 one-click header (Gmail and Yahoo ask
// bulk senders for it). Delivery and the gateway say so in one line at start
// (see mailLinkWarning); they do not refuse to start, since a relay on this
// machine (Mailpit, a test sink) is a real setup where such links are right.

/**
 * The settings links in mail are built on, by variable, as the service uses
 * them: those it makes links with (undefined: not set); one it does not use is
 * left out.
 */
export type MailLinkBases = Partial<Record<"PUBLIC_API_URL" | "PREFERENCES_URL", string | undefined>>;

/** Hosts no recipient elsewhere reaches: this machine, private and link-local networks. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost") || host.endsWith(".local") || host.endsWith(".internal")) return true;
  if (isIP(host) === 4) {
    const [a, b] = host.split(".").map(Number) as [number, number];
    return a === 127 || a === 10 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254);
  }
  if (isIP(host) === 6) return host === "::1" || host === "::" || /^f[cd]/.test(host) || /^fe[89ab]/.test(host);
  return false;
}

/** Whether a listen address serves this machine only (GATEWAY_HOST 127.0.0.1, `npm start`'s), not the network. */
export function listensLocally(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || (isIP(h) === 4 && h.startsWith("127."));
}

/** What would keep recipients from using the links, one phrase per setting; empty when nothing would. */
export function mailLinkProblems(bases: MailLinkBases): string[] {
  const problems: string[] = [];
  for (const name of ["PUBLIC_API_URL", "PREFERENCES_URL"] as const) {
    if (!(name in bases)) continue;
    const raw = bases[name];
    if (raw === undefined) {
      problems.push(`${name} is not set`);
      continue;
    }
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      problems.push(`${name}=${raw} is not a URL`);
      continue;
    }
    const reasons: string[] = [];
    if (isPrivateHost(url.hostname)) reasons.push("is this machine or a private network");
    if (url.protocol !== "https:") reasons.push(name === "PUBLIC_API_URL" ? "is not https (no one-click unsubscribe header)" : "is not https");
    if (reasons.length > 0) problems.push(`${name}=${raw} ${reasons.join(" and ")}`);
  }
  return problems;
}

/** The one log line's message when links in mail would not work for recipients, or undefined. */
export function mailLinkWarning(bases: MailLinkBases): { problems: string[]; message: string } | undefined {
  const problems = mailLinkProblems(bases);
  if (problems.length === 0) return undefined;
  return {
    problems,
    message:
      `links in mail will not work for recipients (${problems.join("; ")}): ` +
      "set PUBLIC_API_URL and PREFERENCES_URL to the https addresses at which the world reaches the gateway and the preference page (README, \"Links in mail\")",
  };
}
