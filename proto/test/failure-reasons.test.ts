import { delivery } from "@emailsvc/proto";

// delivery.FAILURE_REASON_CODES is the one table between the FailureReason
// enum and the codes the REST API and campaigns' fires show.

describe("failure reason codes", () => {
  const values = Object.values(delivery.FailureReason).filter((v): v is delivery.FailureReason => typeof v === "number" && v !== delivery.FailureReason.UNSPECIFIED);

  it("name every reason of the enum once, as the value's name in lower case", () => {
    expect(Object.keys(delivery.FAILURE_REASON_CODES).map(Number).sort((a, b) => a - b)).toEqual(values.sort((a, b) => a - b));
    for (const value of values) expect(delivery.failureReasonCode(value)).toBe(delivery.FailureReason[value]!.toLowerCase());
    expect(new Set(Object.values(delivery.FAILURE_REASON_CODES)).size).toBe(values.length);
  });

  it("map codes and reasons both ways; anything else is unspecified", () => {
    for (const value of values) expect(delivery.failureReasonOfCode(delivery.failureReasonCode(value)!)).toBe(value);
    expect(delivery.failureReasonCode(delivery.FailureReason.UNSPECIFIED)).toBeUndefined();
    expect(delivery.failureReasonOfCode("recipient_rejected: 550 5.1.1 <recipient>: User unknown")).toBe(delivery.FailureReason.UNSPECIFIED);
    expect(delivery.failureReasonOfCode("")).toBe(delivery.FailureReason.UNSPECIFIED);
    expect(delivery.failureReasonOfCode(undefined)).toBe(delivery.FailureReason.UNSPECIFIED);
  });
});
