import { checkBrandColor, checkLogoUrl, contrastRatio, logoOrigin } from "../src/domain/branding";

// The portal's branding rules, pure: which logos and colours an account may set.

describe("contrastRatio", () => {
  it("is WCAG 2.1's ratio", () => {
    expect(contrastRatio("#000000", "#ffffff")).toBeCloseTo(21, 5);
    expect(contrastRatio("#ffffff", "#ffffff")).toBeCloseTo(1, 5);
    // The platform's own blue, and the grey at the AA threshold.
    expect(contrastRatio("#0a58ca", "#ffffff")).toBeGreaterThan(4.5);
    expect(contrastRatio("#767676", "#ffffff")).toBeCloseTo(4.54, 2);
    expect(contrastRatio("#ffffff", "#767676")).toBe(contrastRatio("#767676", "#ffffff"));
  });
});

describe("checkBrandColor", () => {
  it("takes #rrggbb with enough contrast against white, in lower case", () => {
    expect(checkBrandColor("#0A58CA")).toEqual({ color: "#0a58ca" });
    expect(checkBrandColor("#767676")).toEqual({ color: "#767676" });
  });

  it("refuses other forms and colours too light for white text", () => {
    for (const bad of ["0a58ca", "#0a58c", "#0a58caff", "blue", "#gggggg", "#0a58ca;}", ""]) expect(checkBrandColor(bad)).toHaveProperty("problem");
    expect(checkBrandColor("#777777")).toEqual({ problem: expect.stringContaining("4.48:1 with white; at least 4.5:1") });
    expect(checkBrandColor("#ffff00")).toHaveProperty("problem");
  });
});

describe("checkLogoUrl", () => {
  it("takes https URLs, normalised", () => {
    expect(checkLogoUrl("https://CDN.example.com/a b.png")).toEqual({ url: "https://cdn.example.com/a%20b.png" });
    expect(logoOrigin("https://cdn.example.com:8443/x/logo.svg")).toBe("https://cdn.example.com:8443");
  });

  it("refuses other schemes, credentials, non-URLs and long ones", () => {
    for (const bad of ["http://cdn.example.com/logo.png", "data:image/png;base64,AAAA", "javascript:alert(1)", "//cdn.example.com/logo.png", "logo.png", "https://u:p@cdn.example.com/logo.png"]) {
      expect({ bad, result: checkLogoUrl(bad) }).toEqual({ bad, result: { problem: expect.any(String) } });
    }
    expect(checkLogoUrl(`https://cdn.example.com/${"a".repeat(2048)}`)).toHaveProperty("problem");
  });
});
