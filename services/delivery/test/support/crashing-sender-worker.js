// The real sender thread (dist/providers/sender-worker.js) that dies, as a
// thread can (a native fault, an out-of-memory), when it is posted a message
// whose subject is "crash the thread": the crash test of
// providers/threaded.ts. The real worker's listener comes first, so the sends
// of that batch start before the thread ends.
"use strict";
require("../../dist/providers/sender-worker.js");
const { parentPort } = require("node:worker_threads");

parentPort.on("message", (request) => {
  if (request.type === "send" && request.sends.some((send) => send.message.subject === "crash the thread")) process.exit(7);
});
