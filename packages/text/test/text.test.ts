import { hasVisibleText, invisibleBmpClass, isInvisible, trimInvisible } from "../src/text";

describe("visible text", () => {
  it("finds none in spaces, format characters and other default-ignorables", () => {
    for (const blank of ["", " ", "\u200b", "\ufeff", "\u2060", "\u00a0\u3000", "\u200e\u202e", "\u00ad", "\u3164", "\ufe0f", "\u{E0020}\u{E007F}", "\u{1D173}",
      // Blank-looking symbols outside the property classes: Braille pattern blank, the null notehead, the Khitan filler; the Hangul fillers.
      "\u2800", "\u{1D159}", "\u{16FE4}", "\uffa0", "\u115f\u1160"]) {
      expect({ blank, visible: hasVisibleText(blank) }).toEqual({ blank, visible: false });
    }
    for (const text of ["a", "\u200bok\u200b", "🙂", "日本", "\u{1F468}\u200d\u{1F469}"]) expect(hasVisibleText(text)).toBe(true);
  });

  it("trims invisible characters at either end and keeps inner ones", () => {
    expect(trimInvisible("\u200b\ufeff signed up again \u2060")).toBe("signed up again");
    expect(trimInvisible("\u{1F468}\u200d\u{1F469}")).toBe("\u{1F468}\u200d\u{1F469}");
    expect(trimInvisible("\u2800 ok \u{1D159}")).toBe("ok");
    // Braille patterns that show dots are text.
    expect(hasVisibleText("\u2801")).toBe(true);
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
    expect(new RegExp(`[${invisibleBmpClass()}]`).test("\u2800")).toBe(true);
    expect(invisibleBmpClass()).not.toMatch(/\\ud[89a-f]/);
    // No property escapes: tools without Unicode support read it too.
    expect(invisibleBmpClass()).toMatch(/^(\\u[0-9a-f]{4}(-\\u[0-9a-f]{4})?)+$/);
  });
});
