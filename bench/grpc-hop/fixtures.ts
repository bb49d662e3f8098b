// The message pair every cell of the benchmark sends: a GetSubscriber request
// and a realistic response (a subscriber with email, status, a few tags, a
// small metadata Struct and two timestamps), plus the two server-side
// implementations (Connect routes and a grpc-js service) and the grpc-js
// method definition, all using the generated protobuf-es schemas so that
// every pair pays the same serialization cost.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import type * as grpc from "@grpc/grpc-js";
import {
  GetSubscriberRequestSchema,
  GetSubscriberResponseSchema,
  SubscriberService,
  SubscriberStatus,
  type GetSubscriberRequest,
  type GetSubscriberResponse,
} from "@emailsvc/proto";

const createdAtMs = Date.UTC(2026, 2, 14, 9, 30, 0);
const updatedAtMs = Date.UTC(2026, 9, 2, 17, 5, 12);

/** What a subscribers service would build from its stored document. */
export function subscriberResponse(id: string): GetSubscriberResponse {
  return create(GetSubscriberResponseSchema, {
    subscriber: {
      id,
      email: "ada.lovelace@example.com",
      status: SubscriberStatus.ACTIVE,
      tags: ["customers", "newsletter", "beta-testers", "vip"],
      metadata: {
        first_name: "Ada",
        last_name: "Lovelace",
        plan: "professional",
        signup_source: "landing-page",
        orders: 12,
        consent_marketing: true,
      },
      createdAt: timestampFromMs(createdAtMs),
      updatedAt: timestampFromMs(updatedAtMs),
    },
  });
}

export function subscriberRequest(n: number): GetSubscriberRequest {
  return create(GetSubscriberRequestSchema, { id: `sub_01JBENCH${String(n % 100000).padStart(8, "0")}` });
}

/** Encoded size of one response, for the report. */
export const responseBytes = toBinary(GetSubscriberResponseSchema, subscriberResponse("sub_01JBENCH00000000")).byteLength;
export const requestBytes = toBinary(GetSubscriberRequestSchema, subscriberRequest(0)).byteLength;

/** Connect routes: only GetSubscriber is implemented; the rest answer Unimplemented. */
export function routes(router: ConnectRouter): void {
  router.service(SubscriberService, {
    getSubscriber(req) {
      return subscriberResponse(req.id);
    },
  });
}

export const getSubscriberPath = "/emailsvc.subscribers.v1.SubscriberService/GetSubscriber";

export const serializeRequest = (m: GetSubscriberRequest): Buffer => Buffer.from(toBinary(GetSubscriberRequestSchema, m));
export const deserializeRequest = (b: Buffer): GetSubscriberRequest => fromBinary(GetSubscriberRequestSchema, b);
export const serializeResponse = (m: GetSubscriberResponse): Buffer => Buffer.from(toBinary(GetSubscriberResponseSchema, m));
export const deserializeResponse = (b: Buffer): GetSubscriberResponse => fromBinary(GetSubscriberResponseSchema, b);

/** grpc-js service definition for the same method, using the protobuf-es codecs. */
export const grpcJsDefinition: grpc.ServiceDefinition = {
  getSubscriber: {
    path: getSubscriberPath,
    requestStream: false,
    responseStream: false,
    requestSerialize: serializeRequest,
    requestDeserialize: deserializeRequest,
    responseSerialize: serializeResponse,
    responseDeserialize: deserializeResponse,
  },
};

export const grpcJsImplementation: grpc.UntypedServiceImplementation = {
  getSubscriber(
    call: grpc.ServerUnaryCall<GetSubscriberRequest, GetSubscriberResponse>,
    callback: grpc.sendUnaryData<GetSubscriberResponse>,
  ) {
    callback(null, subscriberResponse(call.request.id));
  },
};
