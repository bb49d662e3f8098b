import { PreferenceLinkBase } from "../src/preference-host";

// Where an account's preference links point: its active custom domain as the
// portal says (cached per account), PREFERENCES_URL otherwise or when the
// portal cannot answer. Clock and portal given by the test.

describe("PreferenceLinkBase", () => {
  const settings = { baseUrl: "https://preferences.mail.example.net" };
  let now = 0;
  let answers: Record<string, string | Error>;
  let asked: string[];
  const lookup = async (accountId: string) => {
    asked.push(accountId);
    await new Promise((resolve) => setImmediate(resolve));
    const answer = answers[accountId] ?? "";
    if (answer instanceof Error) throw answer;
    return answer;
  };
  beforeEach(() => {
    now = 0;
    answers = {};
    asked = [];
  });

  it("answers the custom domain while active, else PREFERENCES_URL, asking once per account per TTL", async () => {
    answers.acc_a = "news.example.com";
    const bases = new PreferenceLinkBase(settings, lookup, { ttlMs: 30_000, now: () => now });
    expect(await bases.forAccount("acc_a")).toBe("https://news.example.com");
    expect(await bases.forAccount("acc_b")).toBe("https://preferences.mail.example.net");
    now = 29_999;
    answers.acc_a = "";
    expect(await bases.forAccount("acc_a")).toBe("https://news.example.com");
    expect(asked).toEqual(["acc_a", "acc_b"]);
    now = 30_000;
    expect(await bases.forAccount("acc_a")).toBe("https://preferences.mail.example.net");
    expect(asked).toEqual(["acc_a", "acc_b", "acc_a"]);
  });

  it("shares one lookup between concurrent links of an account", async () => {
    answers.acc_a = "news.example.com";
    const bases = new PreferenceLinkBase(settings, lookup, { now: () => now });
    const all = await Promise.all(Array.from({ length: 50 }, () => bases.forAccount("acc_a")));
    expect(new Set(all)).toEqual(new Set(["https://news.example.com"]));
    expect(asked).toEqual(["acc_a"]);
  });

  it("falls back to PREFERENCES_URL when the portal fails, and asks again soon", async () => {
    const errors: string[] = [];
    answers.acc_a = new Error("UNAVAILABLE");
    const bases = new PreferenceLinkBase(settings, lookup, { failureTtlMs: 5000, now: () => now, onError: (account, err) => errors.push(`${account}: ${(err as Error).message}`) });
    expect(await bases.forAccount("acc_a")).toBe("https://preferences.mail.example.net");
    expect(errors).toEqual(["acc_a: UNAVAILABLE"]);
    answers.acc_a = "news.example.com";
    now = 4999;
    expect(await bases.forAccount("acc_a")).toBe("https://preferences.mail.example.net");
    now = 5000;
    expect(await bases.forAccount("acc_a")).toBe("https://news.example.com");
  });

  it("ignores an answer that is no host name, and needs no portal at all", async () => {
    answers.acc_a = "evil.example.com/path?x=";
    expect(await new PreferenceLinkBase(settings, lookup).forAccount("acc_a")).toBe("https://preferences.mail.example.net");
    expect(await new PreferenceLinkBase(settings, undefined).forAccount("acc_a")).toBe("https://preferences.mail.example.net");
  });
});
