import type { IncomingMessage } from "node:http";
import { exceedsJsonDepth, JSON_MAX_DEPTH } from "./json-depth.js";
import { clientClosedRequest, Problem } from "./problem.js";

// Request bodies are read here rather than by a body-parser package so that
// each way a body can be wrong gets its own clear problem, and so that a body
// is only read after authentication and only up to the cap.

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** True for `application/json`, with no charset or a UTF-8 one (RFC 8259 JSON is UTF-8). */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const [type, ...params] = header.split(";");
  if (type?.trim().toLowerCase() !== "application/json") return false;
  for (const param of params) {
    const [name, value] = param.split("=");
    if (name?.trim().toLowerCase() === "charset" && value?.trim().replace(/"/g, "").toLowerCase() !== "utf-8") return false;
  }
  return true;
}

export function tooLarge(limitBytes: number): Problem {
  return new Problem("payload_too_large", `The request body is larger than ${limitBytes} bytes.`, {
    // The rest of the body is not read: the connection cannot be reused.
    headers: { Connection: "close" },
  });
}

/** Reads the raw body, refusing more than `limitBytes` (announced or sent). */
export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const announced = Number(req.headers["content-length"]);
  if (Number.isFinite(announced) && announced > limitBytes) throw tooLarge(limitBytes);
  return new Promise<Buffer>((resolve, reject) => {
    // Gone already (while the request was authenticated): no event is coming.
    if (req.destroyed) {
      reject(clientClosedRequest());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        // Stop buffering; Node discards what still arrives.
        req.resume();
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // A request stream fails only when its connection does: the client hung
    // up mid-body (or stalled past the server's request timeout). That is
    // no server error: 499, logged as a request like any other, no stack.
    const onError = () => {
      cleanup();
      reject(clientClosedRequest());
    };
    // "close" before "end": the client went away mid-body.
    const onClose = () => {
      cleanup();
      reject(clientClosedRequest());
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

/**
 * True when the request announces no body: neither `Transfer-Encoding` nor a
 * `Content-Length` above 0 (RFC 9112, section 6.3: such a request has none).
 */
export function announcesNoBody(req: IncomingMessage): boolean {
  if (req.headers["transfer-encoding"] !== undefined) return false;
  const length = req.headers["content-length"];
  return length === undefined || Number(length) === 0;
}

/**
 * Reads and parses a JSON body: 415 for another content type, 413 when too
 * large, 400 `invalid_json` when it is not UTF-8 JSON, 400 `json_too_deep`
 * when it nests deeper than JSON_MAX_DEPTH (checked on the text, first).
 * With `optional` (an operation whose body may be left out), a request that
 * announces no body, whatever its content type, and an empty or blank JSON
 * body resolve `undefined`; a body that is there is held to every rule above.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number, options: { optional?: boolean } = {}): Promise<unknown> {
  if (options.optional && announcesNoBody(req)) return undefined;
  if (!isJsonContentType(req.headers["content-type"])) {
    throw new Problem("unsupported_media_type", "Send the body as JSON with `Content-Type: application/json`.");
  }
  const raw = await readBody(req, limitBytes);
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new Problem("invalid_json", "The request body is not valid UTF-8.");
  }
  if (text.trim() === "") {
    if (options.optional) return undefined;
    throw new Problem("invalid_json", "The request body is empty; send a JSON object.");
  }
  if (exceedsJsonDepth(text, JSON_MAX_DEPTH)) {
    throw new Problem(
      "json_too_deep",
      `The request body nests arrays and objects more than ${JSON_MAX_DEPTH} levels deep (the body itself is level 1).`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the body; it is not repeated back.
    throw new Problem("invalid_json", "The request body is not valid JSON.");
  }
  // JSON.parse makes "__proto__" an own key; copied into a plain object later
  // (e.g. metadata to protobuf Struct) it would set that object's prototype.
  if (text.includes("__proto__") && hasProtoKey(value)) {
    throw new Problem("invalid_json", 'Keys named "__proto__" are not allowed.');
  }
  return value;
}

function hasProtoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasProtoKey);
  if (value === null || typeof value !== "object") return false;
  for (const key of Object.keys(value)) {
    if (key === "__proto__" || hasProtoKey((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}
