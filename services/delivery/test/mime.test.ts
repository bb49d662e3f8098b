import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { simpleParser, type AddressObject, type ParsedMail } from "mailparser";
import MailComposer from "nodemailer/lib/mail-composer";
import type { DkimSigningKey, OutgoingMessage } from "../src/domain/message.js";
import { buildMessage, buildRawMessage } from "../src/providers/mime.js";
import { SmtpPool } from "../src/providers/smtp-client.js";
import { DEFAULT_SMTP_TIMEOUTS } from "../src/providers/smtp.js";
import { SmtpSink } from "@emailsvc/testing";
import { quotedPrintable, writeSevenBit, writeSevenBitParts } from "../src/providers/mime-encoding.js";

// Proof that the message writer's output is correct: for many generated
// messages (unicode names and subjects, long lines and words, lines starting
// with "." or "From ", CR/LF mixes, emoji, an empty text part; and as many
// whose bodies are ASCII, which go 7bit where they can), every message has
// CRLF line ends only, no line over 998 characters (76 in quoted-printable),
// each part in 7bit exactly when it may be, parses with mailparser to exactly
// what was given, and
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
/** Bodies of ASCII only (as a rendered MJML newsletter is): whitespace runs, tabs, "=", dots, boundary-like lines; LF breaks mostly, long lines sometimes. */
const ASCII_WORDS = ["hello", "=", "=3D", "tab\there", "  two  spaces ", "x", "<td style=\"padding:0\">", "a".repeat(400), "=?UTF-8?B?Zm9v?=", "\u0001"];
const ASCII_BREAKS = ["\n", "\n", "\n\n", "\n", "\r\n"];

function generate(seed: number, options: { ascii?: boolean } = {}): OutgoingMessage {
  const next = random(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const words = (n: number) => Array.from({ length: n }, () => pick(options.ascii ? ASCII_WORDS : WORDS)).join(" ");
  const body = (lines: number) => {
    let text = "";
    for (let i = 0; i < lines; i++) {
      text += pick(LINE_STARTS) + (next() < 0.2 ? "y".repeat(Math.floor(next() * (options.ascii ? 1100 : 3000))) : words(Math.floor(next() * 30))) + (next() < 0.2 ? " " : "");
      if (i < lines - 1 || next() < 0.5) text += pick(options.ascii ? ASCII_BREAKS : BREAKS);
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

/** The boundary of a multipart message, and each part's transfer encoding and body lines (quoted-printable and 7bit bodies only). */
function partsOf(raw: string): { boundary: string; parts: Array<{ encoding: string; lines: string[] }> } {
  const headerEnd = raw.indexOf("\r\n\r\n");
  const boundary = /boundary="([^"]+)"/.exec(raw.slice(0, headerEnd))?.[1] ?? "";
  const blocks = boundary ? raw.slice(headerEnd + 4).split(`--${boundary}`).slice(1, -1) : [raw];
  return {
    boundary,
    parts: blocks.map((block) => {
      const end = block.indexOf("\r\n\r\n");
      // The CRLF before the next delimiter belongs to the delimiter.
      const content = block.slice(end + 4).replace(/\r\n$/, "");
      return { encoding: /Content-Transfer-Encoding: (\S+)/.exec(block.slice(0, end))![1]!, lines: content.split("\r\n") };
    }),
  };
}

/** Whether a body may go 7bit (RFC 2045 2.7; CR-free, as the writer asks, and not naming the boundary). */
const mayGoSevenBit = (body: string, boundary: string) =>
  /^[\x01-\x0c\x0e-\x7f]*$/.test(body) && body.split("\n").every((line) => line.length <= 998) && !(boundary && body.includes(boundary));

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
  it("writes 600 generated messages that are well formed, go 7bit exactly where they may, parse to what was given and carry RSA and Ed25519 signatures that verify", async () => {
    const encodings = new Set<string>();
    const dotLineClaims = new Set<boolean>();
    for (let seed = 1; seed <= 600; seed++) {
      const message = seed > 300 ? generate(seed, { ascii: true }) : generate(seed);
      const { raw, noDotLines } = await buildMessage(message);
      // What the writer says of lines starting with "." (SMTP skips its dot-stuffing search on its word) holds.
      if (noDotLines) expect({ seed, dotLine: raw.indexOf("\n.") >= 0 || raw[0] === 46 }).toEqual({ seed, dotLine: false });
      dotLineClaims.add(noDotLines);
      const text = raw.toString("latin1");
      const where = `message ${seed}`;
      // CRLF line ends only.
      expect({ where, bareLf: /(^|[^\r])\n/.test(text), bareCr: /\r(?!\n)/.test(text) }).toEqual({ where, bareLf: false, bareCr: false });
      const headerEnd = text.indexOf("\r\n\r\n");
      const longest = (lines: string[]) => Math.max(...lines.map((line) => line.length));
      expect({ where, header: longest(text.slice(0, headerEnd).split("\r\n")) <= 998, body: longest(text.slice(headerEnd + 4).split("\r\n")) <= 998 }).toEqual({ where, header: true, body: true });
      // Each part 7bit when it may be (ASCII, no NUL, lines of 998 at most, not naming the boundary), its lines within 76 in quoted-printable.
      const { boundary, parts } = partsOf(text.slice(text.indexOf("\r\nMIME-Version:") + 2));
      const bodies = [message.text, message.html].filter((body) => body !== "");
      expect({ where, parts: parts.map((p) => p.encoding) }).toEqual({ where, parts: bodies.map((body) => (mayGoSevenBit(body, boundary) && !body.includes("\r") ? "7bit" : "quoted-printable")) });
      for (const part of parts) {
        encodings.add(part.encoding);
        if (part.encoding === "quoted-printable") expect({ where, longest: longest(part.lines) <= 76 }).toEqual({ where, longest: true });
      }
      // The text part is left out when empty.
      expect(text.includes("Content-Type: text/plain")).toBe(message.text !== "");

      expectSaysWhatWasGiven(await simpleParser(raw), message);

      const verdict = await dkimVerify(raw, { resolver });
      expect({ where, results: verdict.results.map((r) => `${r.selector}:${r.status.result}`).sort() }).toEqual({ where, results: ["ed1:pass", "rsa1:pass"] });
    }
    expect([...encodings].sort()).toEqual(["7bit", "quoted-printable"]);
    expect([...dotLineClaims].sort()).toEqual([false, true]);
  });

  it("sends a body that names the multipart boundary, or has a line over 998, in quoted-printable, and it parses back as given", async () => {
    const base = { ...generate(11, { ascii: true }), text: "plain text", html: "<p>hello</p>", dkim: keys };
    const { boundary } = partsOf((await buildRawMessage(base)).toString("latin1"));
    expect(boundary).not.toBe("");
    for (const [text, html] of [
      [`before\n--${boundary}\nContent-Type: text/html\n\n<p>injected</p>\n--${boundary}--\nafter`, "<p>hello</p>"],
      ["plain text", `<p>${"x".repeat(999)}</p>`],
    ] as const) {
      const message = { ...base, text, html };
      const raw = await buildRawMessage(message);
      expect(partsOf(raw.toString("latin1")).parts.map((p) => p.encoding)).toEqual(text === "plain text" ? ["7bit", "quoted-printable"] : ["quoted-printable", "7bit"]);
      expectSaysWhatWasGiven(await simpleParser(raw), message);
      const verdict = await dkimVerify(raw, { resolver });
      expect(verdict.results.map((r) => r.status.result)).toEqual(["pass", "pass"]);
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
      const { boundary } = partsOf(first.toString("latin1"));
      // As the part's encoding has it: quoted-printable, or the text itself with CRLF line ends.
      const encoded = (body: string) => (mayGoSevenBit(body, boundary) && !body.includes("\r") ? Buffer.from(body.replace(/\n/g, "\r\n"), "latin1") : quotedPrintable(body));
      expect(first.includes(encoded(message.html))).toBe(true);
      if (message.text) expect(first.includes(encoded(message.text))).toBe(true);
    }
  });

  it("writes each message's own From and shared headers when consecutive messages differ in one of them, or in their order", async () => {
    const base = generate(3000, { ascii: true });
    const shared = { "List-Id": "<acc_1.live.acme.example>", "X-Campaign-Id": "cmp_a", "Feedback-ID": "cmp_a:acc_1:emailsvc" };
    const variants: OutgoingMessage[] = [
      { ...base, headers: { ...base.headers, ...shared } },
      { ...base, headers: { ...base.headers, ...shared, "X-Campaign-Id": "cmp_b" } },
      { ...base, from: { ...base.from, name: "Other Name" }, headers: { ...base.headers, ...shared } },
      { ...base, from: { ...base.from, address: "other@acme.example" }, headers: { ...base.headers, ...shared } },
      { ...base, headers: { ...base.headers, ...shared, "Reply-To": "help@acme.example" }, replyTo: "help@acme.example" },
      // The same headers in another order, and one fewer.
      { ...base, headers: { "Feedback-ID": shared["Feedback-ID"], ...base.headers, "List-Id": shared["List-Id"], "X-Campaign-Id": shared["X-Campaign-Id"] } },
      { ...base, headers: { ...base.headers, "List-Id": shared["List-Id"], "X-Campaign-Id": shared["X-Campaign-Id"] } },
    ];
    const alone = await Promise.all(variants.map(async (message) => (await buildRawMessage({ ...message, dkim: undefined }, 0)).toString("latin1")));
    const headerBlock = (raw: string) => raw.slice(0, raw.indexOf("\r\n\r\n"));
    // Each after each other one, twice over: the same bytes as written after itself.
    for (const i of variants.keys()) {
      for (const j of variants.keys()) {
        await buildRawMessage({ ...variants[j]!, dkim: undefined }, 0);
        const raw = (await buildRawMessage({ ...variants[i]!, dkim: undefined }, 0)).toString("latin1");
        expect({ i, j, headers: headerBlock(raw) }).toEqual({ i, j, headers: headerBlock(alone[i]!) });
      }
      const parsed = await simpleParser(Buffer.from(alone[i]!, "latin1"));
      expectSaysWhatWasGiven(parsed, variants[i]!);
      expect(alone[i]).toContain("\r\nList-Id: <acc_1.live.acme.example>\r\n");
      expect(parsed.headers.has("feedback-id")).toBe(variants[i]!.headers["Feedback-ID"] !== undefined);
    }
  });

  it("keeps each message's bytes as written while later messages are written (large ones among them)", async () => {
    const kept: Array<{ raw: Buffer; copy: Buffer }> = [];
    for (let seed = 5000; seed < 5300; seed++) {
      const generated = generate(seed, { ascii: seed % 2 === 0 });
      // Now and then a body far beyond a slab's room.
      const message = { ...generated, dkim: seed % 5 === 0 ? keys : undefined, html: seed % 50 === 0 ? generated.html.repeat(400) : generated.html };
      const raw = await buildRawMessage(message, 0);
      kept.push({ raw, copy: Buffer.from(raw) });
    }
    for (const [i, { raw, copy }] of kept.entries()) expect({ i, same: raw.equals(copy) }).toEqual({ i, same: true });
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

describe("the message through SMTP", () => {
  it("arrives with BDAT (CHUNKING) byte for byte as a DATA reader reassembles it, parses to what was given, and its signatures verify", async () => {
    // The BDAT side: the sink's lean server capturing raw bytes (smtp-server has no CHUNKING); the DATA side: smtp-server itself.
    const chunked = await new SmtpSink({ keep: false, capture: true }).start();
    const data = await new SmtpSink().start();
    const poolTo = (sink: SmtpSink) => new SmtpPool({ host: "127.0.0.1", port: sink.port, secure: false, requireTls: false, tlsVerify: true, maxConnections: 2, chunking: true, ...DEFAULT_SMTP_TIMEOUTS });
    const [bdat, dot] = [poolTo(chunked), poolTo(data)];
    try {
      const sent = new Map<string, { message: OutgoingMessage; raw: Buffer }>();
      const sends: Array<Promise<string>> = [];
      for (let seed = 1; seed <= 200; seed++) {
        const message = generate(seed, { ascii: seed % 2 === 0 });
        // Some messages of a single part, which need not end with a line end.
        if (seed % 10 === 0) message.text = "";
        const { raw, noDotLines } = await buildMessage(message, 1_700_000_000_000);
        const envelope = { from: "bounces@acme.example", to: `seed${seed}@example.com` };
        sent.set(envelope.to, { message, raw });
        // All at once: several transactions in flight per connection.
        sends.push(bdat.send(envelope, raw, undefined, noDotLines), dot.send(envelope, raw, undefined, noDotLines));
      }
      await Promise.all(sends);
      expect(chunked.chunkedMessages).toBe(200);
      expect(chunked.captured).toHaveLength(200);
      const endsWithoutLineEnd = [...sent.values()].filter(({ raw }) => !raw.subarray(-2).equals(Buffer.from("\r\n"))).length;
      expect(endsWithoutLineEnd).toBeGreaterThan(0);
      for (const arrived of chunked.captured) {
        const to = arrived.envelope.to[0]!;
        const { message, raw } = sent.get(to)!;
        const [read] = data.to(to);
        expect({ to, command: arrived.command, same: arrived.raw.equals(Buffer.from(read!.raw, "utf8")) }).toEqual({ to, command: "BDAT", same: true });
        // The writer's bytes, with the line end a DATA reader keeps when the message has none.
        const lineEnded = raw.subarray(-2).equals(Buffer.from("\r\n")) ? raw : Buffer.concat([raw, Buffer.from("\r\n")]);
        expect({ to, same: arrived.raw.equals(lineEnded) }).toEqual({ to, same: true });
        // A single part without a line end gains the one SMTP gives it (through DATA as well).
        const given = lineEnded === raw ? message : { ...message, html: message.html && `${message.html}\n`, text: message.text && `${message.text}\n` };
        expectSaysWhatWasGiven(await simpleParser(arrived.raw), given);
        const verdict = await dkimVerify(arrived.raw, { resolver });
        expect({ to, results: verdict.results.map((r) => `${r.selector}:${r.status.result}`).sort() }).toEqual({ to, results: ["ed1:pass", "rsa1:pass"] });
      }
    } finally {
      await Promise.all([bdat.close(), dot.close()]);
      await Promise.all([chunked.close(), data.close()]);
    }
  });
});

describe("7bit", () => {
  const out = Buffer.alloc(8192);
  it.each([
    ["ASCII lines", "a  b \n\tc\n\n.d\n", "a  b \r\n\tc\r\n\r\n.d\r\n"],
    ["no line break", "hello", "hello"],
    ["empty", "", ""],
    ["a line of 998", "x".repeat(998), "x".repeat(998)],
  ])("writes %s as it is, with CRLF line ends", (_name, input, expected) => {
    const end = writeSevenBit(input, out, 3, "=_boundary");
    expect(out.toString("latin1", 3, end)).toBe(expected);
  });
  it.each([
    ["non-ASCII", "caf\u00e9"],
    ["a NUL", "a\u0000b"],
    ["a CR", "a\r\nb"],
    ["a line of 999", `ok\n${"x".repeat(999)}\nok`],
    ["the boundary", "a\n--=_boundary\nb"],
  ])("refuses %s", (_name, input) => {
    expect(writeSevenBit(input, out, 0, "=_boundary")).toBe(-1);
  });
});

describe("7bit from parts (a version's fixed text and a message's values)", () => {
  const join = (statics: readonly string[], values: readonly string[]) => statics.reduce((text, piece, i) => text + (i > 0 ? values[i - 1]! : "") + piece, "");
  const PIECES = ["<td>", "</td>\n", "\n", "\n.", ".x", "", "a=b", "=", "_", "--=_", "x".repeat(600), "\n" + "y".repeat(400), "caf\u00e9", "\r\n", "<a href=\"", "\">"];
  const VALUES = ["Ada", "", ".dot", "two\nlines", "\n.", "a&amp;b", "=", "=_x", "_", "z".repeat(500), "\u00e9", "a\u0000b", "a\rb", "\n" + "w".repeat(998), "https://x.example/?a&#x3D;1"];

  it("writes exactly what 7bit of the joined text is, or -1 for the caller to write that, for 3,000 generated bodies", () => {
    const out = Buffer.alloc(64 * 1024);
    const whole = Buffer.alloc(64 * 1024);
    let fromParts = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const next = random(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
      const piece = () => Array.from({ length: Math.floor(next() * 4) }, () => pick(PIECES)).join("");
      // Most versions are ASCII text without CR (as MJML writes it): those must go from their parts.
      const plain = seed % 3 !== 0;
      const statics = Array.from({ length: 1 + Math.floor(next() * 6) }, () => (plain ? piece().replace(/[\r\u00e9]/g, "") : piece()));
      const values = statics.slice(1).map(() => (plain && next() < 0.7 ? pick(["Ada", "", "a&amp;b", ".dot", "two\nlines"]) : pick(VALUES)));
      const text = join(statics, values);
      const lines = { dotted: false };
      const end = writeSevenBitParts(statics, values, out, 5, "=_boundary", lines);
      const expected = { dotted: false };
      const wholeEnd = writeSevenBit(text, whole, 5, "=_boundary", expected);
      if (end < 0) {
        // Only where telling needs the joined text: a value that could be part of the boundary, or one the joined text refuses.
        if (wholeEnd >= 0) expect({ seed, boundaryLike: values.some((v) => v.includes("=_") || v.endsWith("=")) || statics.some((p) => p.includes("=")) }).toEqual({ seed, boundaryLike: true });
        continue;
      }
      fromParts++;
      expect({ seed, bytes: out.toString("latin1", 5, end), dotted: lines.dotted }).toEqual({ seed, bytes: whole.toString("latin1", 5, wholeEnd), dotted: expected.dotted });
    }
    expect(fromParts).toBeGreaterThan(1000);
  });

  it.each([
    ["a fixed piece ending in the boundary's start, a value completing it", ["a\n--=_bo", "\nb"], ["undary"]],
    ["a value ending in the boundary's start", ["a\n--", "undary\nb"], ["=_bo"]],
    ["a line made too long by a value", ["x".repeat(500), "\n"], ["y".repeat(499)]],
    ["a line made too long by two values", ["x".repeat(300), "y".repeat(300), ""], ["z".repeat(200), "w".repeat(199)]],
    ["a value with a CR", ["<p>", "</p>"], ["a\r\nb"]],
    ["a fixed piece beyond ASCII", ["caf\u00e9 ", ""], ["Ada"]],
  ])("does not go 7bit with %s", (_name, statics, values) => {
    const out = Buffer.alloc(8192);
    expect(writeSevenBitParts(statics, values, out, 0, "=_boundary")).toBe(-1);
  });

  it("goes 7bit with a line of 998 made of fixed text and values, and marks a value starting a line with a dot", () => {
    const out = Buffer.alloc(8192);
    const lines = { dotted: false };
    const end = writeSevenBitParts(["x".repeat(500), "\n"], ["y".repeat(498)], out, 0, "=_boundary", lines);
    expect(out.toString("latin1", 0, end)).toBe(`${"x".repeat(500)}${"y".repeat(498)}\r\n`);
    expect(lines.dotted).toBe(false);
    writeSevenBitParts(["a\n", "b"], [".x"], out, 0, "=_boundary", lines);
    expect(lines.dotted).toBe(true);
  });

  it("writes the same message, byte for byte and signed alike, from a body's parts as from its text", async () => {
    const scratch = Buffer.alloc(64 * 1024);
    let fromParts = 0;
    for (let seed = 4000; seed < 4200; seed++) {
      const generated = generate(seed, { ascii: seed % 2 === 0 });
      // A quarter without CR or "=", as a rendered MJML body is (and as its values are, escaped).
      const message = seed % 4 === 0 ? { ...generated, html: generated.html.replace(/\r/g, "").replace(/=/g, "-") } : generated;
      // The body cut at a few places, as a renderer gives a version's fixed text and a message's values.
      const next = random(seed);
      const cuts = [...new Set(Array.from({ length: 6 }, () => Math.floor(next() * message.html.length)))].sort((a, b) => a - b);
      const pieces: string[] = [];
      let at = 0;
      for (const cut of cuts) {
        pieces.push(message.html.slice(at, cut));
        at = cut;
      }
      pieces.push(message.html.slice(at));
      const statics = pieces.filter((_, i) => i % 2 === 0);
      const values = pieces.filter((_, i) => i % 2 === 1);
      if (statics.length === values.length) statics.push("");
      expect(join(statics, values)).toBe(message.html);
      const plain = await buildMessage({ ...message }, 0);
      const parted = await buildMessage({ ...message, htmlParts: { statics, values } }, 0);
      expect({ seed, raw: parted.raw.toString("latin1"), noDotLines: parted.noDotLines }).toEqual({ seed, raw: plain.raw.toString("latin1"), noDotLines: plain.noDotLines });
      if (writeSevenBitParts(statics, values, scratch, 0, partsOf(plain.raw.toString("latin1")).boundary) >= 0) fromParts++;
    }
    // Not only the fallback to the text: the ASCII bodies with short lines went from their parts.
    expect(fromParts).toBeGreaterThan(10);
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
