import { isPrivateHost, listensLocally, mailLinkProblems, mailLinkWarning } from "../src/mail-links.js";

// The bases of links in mail, as delivery and the gateway check them at start.

describe("links in mail", () => {
  it("knows the hosts no recipient elsewhere reaches", () => {
    for (const host of ["localhost", "app.localhost", "127.0.0.1", "127.8.9.1", "10.1.2.3", "172.16.0.1", "172.31.255.1", "192.168.1.10", "169.254.1.1", "0.0.0.0", "[::1]", "::1", "fd00::1", "fe80::1", "mail.local", "api.internal", "LOCALHOST."]) {
      expect({ host, private: isPrivateHost(host) }).toEqual({ host, private: true });
    }
    for (const host of ["api.example.com", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2001:db8::1", "localhost.example.com"]) {
      expect({ host, private: isPrivateHost(host) }).toEqual({ host, private: false });
    }
    expect(["127.0.0.1", "localhost", "::1"].map(listensLocally)).toEqual([true, true, true]);
    expect(["0.0.0.0", "::", "10.0.0.5"].map(listensLocally)).toEqual([false, false, false]);
  });

  it("names each base that would not work, and only the ones given", () => {
    expect(mailLinkProblems({ PUBLIC_API_URL: "https://api.example.com", PREFERENCES_URL: "https://preferences.example.com" })).toEqual([]);
    expect(mailLinkProblems({ PUBLIC_API_URL: "http://localhost:8080", PREFERENCES_URL: "http://prefs.example.com" })).toEqual([
      "PUBLIC_API_URL=http://localhost:8080 is this machine or a private network and is not https (no one-click unsubscribe header)",
      "PREFERENCES_URL=http://prefs.example.com is not https",
    ]);
    expect(mailLinkProblems({ PUBLIC_API_URL: undefined })).toEqual(["PUBLIC_API_URL is not set"]);
    expect(mailLinkProblems({ PREFERENCES_URL: "https://10.0.0.7" })).toEqual(["PREFERENCES_URL=https://10.0.0.7 is this machine or a private network"]);
    expect(mailLinkWarning({ PUBLIC_API_URL: "https://api.example.com" })).toBeUndefined();
    expect(mailLinkWarning({ PUBLIC_API_URL: "nonsense" })?.message).toMatch(/^links in mail will not work for recipients \(PUBLIC_API_URL=nonsense is not a URL\): set PUBLIC_API_URL and PREFERENCES_URL/);
  });
});
