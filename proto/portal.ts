// The portal's contracts under one name (`portal.*`): the preference center and its settings, and custom domains.
export * from "./gen/emailsvc/portal/v1/preference_center_pb.js";
export * from "./gen/emailsvc/portal/v1/domains_pb.js";
