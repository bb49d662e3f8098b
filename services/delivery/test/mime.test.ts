import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { simpleParser, type AddressObject, type ParsedMail } from "mailparser";
import MailComposer from "nodemailer/lib/mail-composer";
import type { DkimSigningKey, OutgoingMessage } from "../src/domain/message.js";
import { buildRawMessage } from "../src/providers/mime.js";
import { quotedPrintable } from "../src/providers/mime-encoding.js";

// Proof that the message writer's output is correct: for many generated
// messages (unicode names and subjects, long lines and words, lines starting
// with "." or "From ", CR/LF mixes, emoji, an empty text part), every
// message has CRLF line ends only, no line over 998 characters (76 in
// quoted-printable), parses with mailparser to exactly what was given, and
// its DKIM signatures (RSA and Ed25519) verify with an independent verifier
// (mailauth). And it says the same as nodemailer's MailComposer, which it
// replaced.

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { dkimVerify } = require("mailauth/lib/dkim/verify") as {
  dkimVerify(message: Buffer, options: { resolver: (name: string, type: string) => Promise<string[][]> }): Promise<{ results: Array<{ status: { result: string }; signingDomain: string; selector: string }> }>;
};

const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ed = generateKeyPairSync("ed25519");
const dnsKey = (key: KeyObject, type: "rsa" | "ed25519") => {
  const der = key.export({ type: "spki", format: "der" });
  // An Ed25519 record carries the raw 32-byte key (RFC 8463 4.2), RSA the SubjectPublicKeyInfo.
  return `v=DKIM1; k=${type}; p=${(type === "ed25519" ? der.subarray(der.length - 32) : der).toString("base64")}`;
};
const zone: Record<string, string> = {
  "rsa1._domainkey.acme.example": dnsKey(rsa.publicKey, "rsa"),
  "ed1._domainkey.acme.example": dnsKey(ed.publicKey, "ed25519"),
};
const resolver = async (name: string): Promise<string[][]> => {
  const record = zone[name.toLowerCase()];
  if (!record) throw Object.assign(new Error(`no TXT for ${name}`), { code: "ENOTFOUND" });
  return [[record]];
};
const keys: DkimSigningKey[] = [
  { domain: "acme.example", selector: "rsa1", privateKey: rsa.privateKey },
  { domain: "acme.example", selector: "ed1", privateKey: ed.privateKey },
];

/** A small deterministic generator (mulberry32), so a failure names a message that can be made again. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = ["", "Acme", "Zoë Ærøskøbing", "山田 太郎", "🎉 Party Team", 'O"Brien \\ Co', "Acme, Inc. (news)", "Ünïcödé ".repeat(12).trim(), "A".repeat(90)];
const WORDS = ["hello", "Grüße", "naïve", "日本語", "🙂", "=?UTF-8?B?Zm9v?=", "a".repeat(1200), "=", "=3D", "tab\there", "  two  spaces ", "x"];
const LINE_STARTS = [".", "..", "From ", ". ", "", " ", "\t", "-- ", "--=_"];
const BREAKS = ["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"];

function generate(seed: number): OutgoingMessage {
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const body = (lines: number) => {
    let text = "";
    for (let i = 0; i < lines; i++) {
      text += pick(LINE_STARTS) + (next() < 0.2 ? "y".repeat(Math.floor(next() * 3000)) : words(Math.floor(next() * 30))) + (next() < 0.2 ? " " : "");
      if (i < lines - 1 || next() < 0.5) text += pick(BREAKS);
    }
    return text;
  };
  const name = pick(NAMES);
  const subject = next() < 0.1 ? "" : words(1 + Math.floor(next() * 25)).replace(/[\t\r\n]/g, " ").trim();
  const to = `reader${seed}@example.com`;
  const messageId = `<eml_${seed}@acme.example>`;
  const headers: Record<string, string> = { To: to, Subject: subject, "Message-ID": messageId };
  if (next() < 0.7) {
    headers["List-Unsubscribe"] = `<https://api.acme.example/unsubscribe?token=${"t".repeat(Math.floor(next() * 300))}>`;
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
    headers["List-Id"] = "<acc_1.live.acme.example>";
    headers["X-Campaign-Id"] = `cmp_${seed}`;
    headers["Feedback-ID"] = `cmp_${seed}:acc_1:emailsvc`;
  }
  const replyTo = next() < 0.3 ? "support@acme.example" : undefined;
  if (replyTo) headers["Reply-To"] = replyTo;
  return {
    emailId: `eml_${seed}`,
    from: { name, address: "news@acme.example", domain: "acme.example", header: "" },
    to,
    ...(replyTo ? { replyTo } : {}),
    subject,
    html: `<html><body>${body(1 + Math.floor(next() * 12))}</body></html>`,
    text: next() < 0.15 ? "" : body(1 + Math.floor(next() * 12)),
    messageId,
    headers,
    dkim: keys,
  };
}

/** What a reader gets back of a body: line ends as "\n". */
const lines = (text: string) => text.replace(/\r\n|\r/g, "\n");
const addresses = (value: AddressObject | AddressObject[] | undefined) => (Array.isArray(value) ? value : value ? [value] : []).flatMap((a) => a.value);

function expectSaysWhatWasGiven(parsed: ParsedMail, message: OutgoingMessage): void {
  expect(parsed.subject ?? "").toBe(message.subject);
  expect(addresses(parsed.from)).toEqual([{ name: message.from.name, address: message.from.address }]);
  expect(addresses(parsed.to)).toEqual([{ name: "", address: message.to }]);
  expect(parsed.messageId).toBe(message.messageId);
  expect(parsed.html).toBe(lines(message.html));
  if (message.text) expect(parsed.text).toBe(lines(message.text));
  if (message.replyTo) expect(addresses(parsed.replyTo)).toEqual([{ name: "", address: message.replyTo }]);
  for (const name of ["X-Campaign-Id", "Feedback-ID"]) {
    if (message.headers[name]) expect(parsed.headers.get(name.toLowerCase())).toBe(message.headers[name]);
  }
  const unsubscribe = message.headers["List-Unsubscribe"];
  if (unsubscribe) expect(parsed.headerLines.find((h) => h.key === "list-unsubscribe")!.line.replace(/\r\n[ \t]/g, " ")).toBe(`List-Unsubscribe: ${unsubscribe}`);
}

describe("MIME writer", () => {
  it("writes 300 generated messages that are well formed, parse to what was given and carry RSA and Ed25519 signatures that verify", async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const message = generate(seed);
      const raw = await buildRawMessage(message);
      const text = raw.toString("latin1");
      const where = `message ${seed}`;
      // CRLF line ends only.
      expect({ where, bareLf: /(^|[^\r])\n/.test(text), bareCr: /\r(?!\n)/.test(text) }).toEqual({ where, bareLf: false, bareCr: false });
      const headerEnd = text.indexOf("\r\n\r\n");
      const longest = (block: string) => Math.max(...block.split("\r\n").map((line) => line.length));
      expect({ where, header: longest(text.slice(0, headerEnd)) <= 998, body: longest(text.slice(headerEnd + 4)) <= 76 }).toEqual({ where, header: true, body: true });
      // The text part is left out when empty.
      expect(text.includes("Content-Type: text/plain")).toBe(message.text !== "");

      expectSaysWhatWasGiven(await simpleParser(raw), message);

      const verdict = await dkimVerify(raw, { resolver });
      expect({ where, results: verdict.results.map((r) => `${r.selector}:${r.status.result}`).sort() }).toEqual({ where, results: ["ed1:pass", "rsa1:pass"] });
    }
  });

  it("writes bodies from the lines a skeleton has encoded before, byte for byte as encoding them afresh", async () => {
    // One sender and campaign (one skeleton) for many different bodies: lines recur, and some are copied.
    const from = generate(2000).from;
    for (let seed = 2000; seed < 2100; seed++) {
      const generated = generate(seed);
      const message = { ...generated, from, dkim: undefined, headers: { ...generated.headers, "X-Campaign-Id": "cmp_shared" } };
      const first = await buildRawMessage(message, 0);
      expect((await buildRawMessage(message, 0)).equals(first)).toBe(true);
      expect(first.includes(quotedPrintable(message.html))).toBe(true);
      if (message.text) expect(first.includes(quotedPrintable(message.text))).toBe(true);
    }
  });

  it("a changed header or body breaks both signatures", async () => {
    const raw = (await buildRawMessage(generate(7))).toString("latin1");
    for (const tampered of [raw.replace(/^To: .*$/m, "To: someone@else.example"), raw.replace(/--\r\n$/, "--\r\nextra\r\n")]) {
      const verdict = await dkimVerify(Buffer.from(tampered, "latin1"), { resolver });
      // A changed header is "fail"; mailauth calls a body that no longer matches its hash "neutral".
      expect(verdict.results).toHaveLength(2);
      for (const result of verdict.results) expect(["fail", "neutral"]).toContain(result.status.result);
    }
  });

  it("says the same as nodemailer's MailComposer did: subject, addresses, parts, Message-ID and headers", async () => {
    for (let seed = 1000; seed < 1040; seed++) {
      const generated = generate(seed);
      // A lone CR is a line break to the writer, not to MailComposer: compared on text without one.
      const message = { ...generated, html: lines(generated.html), text: lines(generated.text), dkim: undefined };
      const { From: _f, To: _t, Subject: _s, "Message-ID": _m, "Reply-To": _r, ...extra } = message.headers;
      const before = await new MailComposer({
        from: message.from.name ? { name: message.from.name, address: message.from.address } : message.from.address,
        to: message.to,
        subject: message.subject,
        ...(message.replyTo ? { replyTo: message.replyTo } : {}),
        html: message.html,
        text: message.text,
        messageId: message.messageId,
        headers: extra,
      })
        .compile()
        .build();
      const [old, now] = await Promise.all([simpleParser(before), simpleParser(await buildRawMessage(message))]);
      // MailComposer wrote ASCII that looks like an encoded word as it was, so a reader decoded it; the writer encodes it.
      expect(now.subject ?? "").toBe(message.subject);
      const what = (parsed: ParsedMail) => ({
        subject: message.subject.includes("=?") ? "" : parsed.subject,
        from: addresses(parsed.from),
        to: addresses(parsed.to),
        replyTo: addresses(parsed.replyTo),
        messageId: parsed.messageId,
        // MailComposer ended a single part's content with a line break it was not given; the writer keeps the content as given.
        html: typeof parsed.html === "string" ? parsed.html.replace(/\n$/, "") : parsed.html,
        text: message.text ? parsed.text?.replace(/\n$/, "") : "",
        headers: [...parsed.headers.keys()].filter((k) => !["content-transfer-encoding", "date"].includes(k)).sort(),
      });
      expect(what(now)).toEqual(what(old));
    }
  });
});

describe("quoted-printable", () => {
  it.each([
    ["plain ASCII", "hello", "hello"],
    ["= and non-ASCII", "a=b é", "a=3Db =C3=A9"],
    ["a space before a line end, a run of spaces, a tab", "a \nb  c\td", "a=20\r\nb =20c=09d"],
    ["a space at the end", "end ", "end=20"],
    ["CR, LF and CRLF alike", "a\rb\nc\r\nd", "a\r\nb\r\nc\r\nd"],
    ["a long line broken softly at 76", "x".repeat(80), `${"x".repeat(75)}=\r\nxxxxx`],
    ["an escape never split", `${"x".repeat(74)}é`, `${"x".repeat(74)}=\r\n=C3=A9`],
  ])("%s", (_name, input, expected) => {
    expect(quotedPrintable(input).toString("latin1")).toBe(expected);
  });
});
