import { lookup as dnsLookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { literalAddress, type AddressPolicy } from "../domain/address-policy.js";

// The one way the service makes a request to an integrator's URL. Its host
// is resolved here, every address it resolves to is checked against the
// policy, and the connection goes to the checked address (the socket's
// `lookup` answers it, so there is no second lookup that DNS rebinding could
// answer differently). Redirects are never followed: a 3xx is a failure, as
// following one would be a request to a URL nobody checked.

/** Resolves a host name to its addresses (dns.lookup with all: true; tests inject their own). */
export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export interface PostOutcome {
  /** HTTP status; 0 when there was no answer. */
  code: number;
  durationMs: number;
  /** What went wrong, without personal data ("" for a 2xx). */
  error: string;
  /** True for a 2xx. */
  ok: boolean;
}

export interface PostOptions {
  policy: AddressPolicy;
  resolver: Resolver;
  timeoutMs: number;
}

/** How much of an answer's body is read (then the connection is dropped): it is not kept. */
const MAX_BODY_BYTES = 64 * 1024;

export async function postWebhook(options: PostOptions, url: string, headers: Record<string, string>, body: string): Promise<PostOutcome> {
  const started = process.hrtime.bigint();
  const elapsed = () => Math.round(Number(process.hrtime.bigint() - started) / 1e6);
  const failed = (error: string, code = 0): PostOutcome => ({ code, durationMs: elapsed(), error, ok: false });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return failed("the URL does not parse");
  }
  let pinned: { address: string; family: number };
  const literal = literalAddress(target.hostname);
  if (literal !== undefined) {
    pinned = { address: literal, family: literal.includes(":") ? 6 : 4 };
  } else {
    let addresses: Array<{ address: string; family: number }>;
    let dnsTimer: NodeJS.Timeout | undefined;
    try {
      // The attempt's timeout covers the lookup too: a resolver that never answers holds no attempt.
      const timedOut = new Promise<never>((_, reject) => {
        dnsTimer = setTimeout(() => reject(Object.assign(new Error("DNS timeout"), { code: "ETIMEOUT" })), options.timeoutMs);
      });
      addresses = await Promise.race([options.resolver(target.hostname), timedOut]);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return failed(`DNS lookup failed${code ? ` (${code})` : ""}`);
    } finally {
      clearTimeout(dnsTimer);
    }
    if (addresses.length === 0) return failed("DNS lookup found no address");
    // Every address the name has must be allowed: the one picked is then one of them.
    if (addresses.some((a) => !options.policy.allows(a.address))) {
      return failed("refused: the host resolves to a loopback, private, link-local or otherwise reserved address");
    }
    pinned = addresses[0]!;
  }
  if (!options.policy.allows(pinned.address)) return failed("refused: the URL names a loopback, private, link-local or otherwise reserved address");

  const lookup: LookupFunction = (_hostname, lookupOptions, callback) => {
    // Node 20's connect asks for every address (autoSelectFamily); either way, only the checked one.
    if ((lookupOptions as { all?: boolean }).all) (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const send = target.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<PostOutcome>((resolve) => {
    let settled = false;
    const finish = (outcome: PostOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const req = send(target, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), "user-agent": "emailsvc-webhooks/1" },
      lookup,
      agent: false,
    });
    const timer = setTimeout(() => {
      finish(failed(`no answer within ${Math.round(options.timeoutMs / 1000)} s`));
      req.destroy();
    }, options.timeoutMs);
    req.on("error", (err: NodeJS.ErrnoException) => finish(failed(`connection failed${err.code ? ` (${err.code})` : ""}`)));
    req.on("response", (res: IncomingMessage) => {
      const code = res.statusCode ?? 0;
      let read = 0;
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_BODY_BYTES) res.destroy();
      });
      const done = () => {
        if (code >= 200 && code < 300) finish({ code, durationMs: elapsed(), error: "", ok: true });
        else if (code >= 300 && code < 400) finish(failed(`redirect not followed (${code}); give the final URL`, code));
        else finish(failed(`the endpoint answered ${code}`, code));
      };
      res.on("end", done);
      res.on("close", done);
      res.on("error", done);
    });
    req.end(body);
  });
}
