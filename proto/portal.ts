// The portal's contracts under one name (`portal.*`): the preference center and its settings, custom domains, signup forms.
export * from "./gen/emailsvc/portal/v1/preference_center_pb.js";
export * from "./gen/emailsvc/portal/v1/domains_pb.js";
export * from "./gen/emailsvc/portal/v1/forms_pb.js";
