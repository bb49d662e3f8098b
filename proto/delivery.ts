// Delivery's contracts under one name (`delivery.*`): DeliveryService and its failure reasons.
export * from "./gen/emailsvc/delivery/v1/delivery_pb.js";
export * from "./gen/emailsvc/delivery/v1/failure_reason_pb.js";
