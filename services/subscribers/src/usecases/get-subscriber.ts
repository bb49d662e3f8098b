import { notFound } from "@emailsvc/errors";
import { emailKey, validateEmail, type SubscriberView } from "../domain/subscriber.js";
import { loadSubscriber, subscriberView, type Scope } from "./deps.js";

export async function getSubscriber(scope: Scope, id: string): Promise<SubscriberView> {
  return subscriberView(scope, await loadSubscriber(scope, id));
}

export async function getSubscriberByEmail(scope: Scope, email: string): Promise<SubscriberView> {
  const key = emailKey(validateEmail(email));
  const doc = await scope.subscribers.findOne({ email_key: key, deleted: false });
  if (!doc) throw notFound("subscriber");
  return subscriberView(scope, doc);
}
