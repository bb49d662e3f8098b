// @emailsvc/outbox: the in-document outbox (DESIGN.md: "an outbox inside the
// document"). A change to a document and the side effects it implies (bus
// events, and whatever a service adds, such as audit records) are written in
// one single-document write: the change appends entries to the document's
// `outbox`, sets `outbox_pending` and bumps `version`. Right after the write
// the relay carries the entries out and clears the outbox guarded by
// `version`; a periodic sweep finishes what a crash or a bus outage left.
// Effects may repeat (after a crash between publishing and clearing) but are
// never lost, without multi-document transactions.

export { newOutbox, withOutbox, OUTBOX_INDEX, type OutboxDoc, type OutboxEntry, type OutboxFields } from "./document.js";
export { clearOutbox, OutboxRelay, type OutboxAfterWrite, type OutboxRelayOptions, type RelayLogger, type RelayPass } from "./relay.js";
