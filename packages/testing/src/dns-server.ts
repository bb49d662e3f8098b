import { createSocket, type Socket } from "node:dgram";

// A tiny authoritative DNS server over UDP for tests and benchmarks: it answers CNAME and
// TXT questions from maps the test changes, and NXDOMAIN for any other name.
// The services' production resolvers (node:dns, CUSTOM_DOMAIN_DNS_SERVERS,
// SENDER_DOMAIN_DNS_SERVERS) ask it, so the lookup path under test is the real one.

export interface TestDnsServer {
  /** `<host>:<port>`, for CUSTOM_DOMAIN_DNS_SERVERS. */
  address: string;
  /** name -> CNAME target (lower case, no trailing dot); delete to make it NXDOMAIN. */
  cnames: Map<string, string>;
  /** name -> TXT records (each text split into character-strings of 255 octets, as zones publish long DKIM keys). */
  txts: Map<string, string[]>;
  /** Names asked for, in order. */
  asked: string[];
  close(): Promise<void>;
}

const TYPE_CNAME = 5;
const TYPE_TXT = 16;

function readName(message: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  for (;;) {
    const length = message[at]!;
    if (length === 0) return { name: labels.join("."), end: at + 1 };
    labels.push(message.subarray(at + 1, at + 1 + length).toString("ascii"));
    at += 1 + length;
  }
}

function encodeName(name: string): Buffer {
  const parts = name.split(".").filter(Boolean).map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label, "ascii")]));
  return Buffer.concat([...parts, Buffer.from([0])]);
}

/** A TXT record's data: the text as character-strings of at most 255 octets each. */
function txtData(text: string): Buffer {
  const bytes = Buffer.from(text, "utf8");
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length || parts.length === 0; at += 255) {
    const chunk = bytes.subarray(at, at + 255);
    parts.push(Buffer.from([chunk.length]), chunk);
  }
  return Buffer.concat(parts);
}

function answer(query: Buffer, cnames: Map<string, string>, txts: Map<string, string[]>, asked: string[]): Buffer {
  const { name, end } = readName(query, 12);
  const type = query.readUInt16BE(end);
  asked.push(name.toLowerCase());
  const question = query.subarray(12, end + 4);
  const target = cnames.get(name.toLowerCase());
  const texts = txts.get(name.toLowerCase());
  const known = target !== undefined || texts !== undefined;
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2); // id
  // QR, opcode 0, AA, RD copied; RA; rcode 0 or 3 (NXDOMAIN).
  const rd = query[2]! & 0x01;
  header[2] = 0x84 | rd;
  header[3] = 0x80 | (known ? 0 : 3);
  header.writeUInt16BE(1, 4);
  const answers: Buffer[] = [];
  if (target && type === TYPE_CNAME) {
    const rdata = encodeName(target);
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0); // the question's name
    record.writeUInt16BE(TYPE_CNAME, 2);
    record.writeUInt16BE(1, 4); // IN
    record.writeUInt32BE(60, 6);
    record.writeUInt16BE(rdata.length, 10);
    answers.push(record, rdata);
  }
  let count = answers.length > 0 ? 1 : 0;
  if (texts && type === TYPE_TXT) {
    for (const text of texts) {
      const rdata = txtData(text);
      const record = Buffer.alloc(12);
      record.writeUInt16BE(0xc00c, 0);
      record.writeUInt16BE(TYPE_TXT, 2);
      record.writeUInt16BE(1, 4);
      record.writeUInt32BE(60, 6);
      record.writeUInt16BE(rdata.length, 10);
      answers.push(record, rdata);
      count += 1;
    }
  }
  header.writeUInt16BE(count, 6);
  return Buffer.concat([header, question, ...answers]);
}

/** `host`: where it listens (default 127.0.0.1; e.g. a Kubernetes node's address, for resolvers in Pods). */
export async function startTestDnsServer(host = "127.0.0.1"): Promise<TestDnsServer> {
  const cnames = new Map<string, string>();
  const txts = new Map<string, string[]>();
  const asked: string[] = [];
  const socket: Socket = createSocket("udp4");
  socket.on("message", (message, peer) => {
    try {
      socket.send(answer(message, cnames, txts, asked), peer.port, peer.address);
    } catch {
      // a malformed question: no answer
    }
  });
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  return {
    address: `${host}:${socket.address().port}`,
    cnames,
    txts,
    asked,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
