import { hasVisibleText, invisibleBmpClass, isInvisible, trimInvisible } from "../src/text";

describe("visible text", () => {
  it("finds none in spaces, format characters and other default-ignorables", () => {
    for (const blank of ["", " ", "\u200b", "\ufeff", "\u2060", "\u00a0\u3000", "\u200e\u202e", "\u00ad", "\u3164", "\ufe0f", "\u{E0020}\u{E007F}", "\u{1D173}"]) {
      expect({ blank, visible: hasVisibleText(blank) }).toEqual({ blank, visible: false });
    }
    for (const text of ["a", "\u200bok\u200b", "🙂", "日本", "\u{1F468}\u200d\u{1F469}"]) expect(hasVisibleText(text)).toBe(true);
  });

  it("trims invisible characters at either end and keeps inner ones", () => {
    expect(trimInvisible("\u200b\ufeff signed up again \u2060")).toBe("signed up again");
    expect(trimInvisible("\u{1F468}\u200d\u{1F469}")).toBe("\u{1F468}\u200d\u{1F469}");
  });

  it("spells out the same rule for the BMP as a character class, for JSON Schema patterns", () => {
    const invisible = new RegExp(`^[${invisibleBmpClass()}]$`);
    const disagree: string[] = [];
    for (let code = 0; code <= 0xffff; code++) {
      // Lone surrogates are left to the services' check (see invisibleBmpClass).
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const char = String.fromCharCode(code);
      if (invisible.test(char) !== isInvisible(char)) disagree.push(code.toString(16));
    }
    expect(disagree).toEqual([]);
    expect(invisibleBmpClass()).not.toMatch(/\\ud[89a-f]/);
    // No property escapes: tools without Unicode support read it too.
    expect(invisibleBmpClass()).toMatch(/^(\\u[0-9a-f]{4}(-\\u[0-9a-f]{4})?)+$/);
  });
});
