import { lineOf, sampleVariables } from "../src/pages/templates/variables";

// The template editor's pure helpers: sample values nested by their paths,
// and the line a problem of the templates service names.

it("nests sample values by their dotted paths and leaves out empty ones", () => {
  expect(sampleVariables({ first_name: "Ada", "order.id": "A-1", "order.total": "9", "a.b.c": "deep", empty: "" })).toEqual({
    first_name: "Ada",
    order: { id: "A-1", total: "9" },
    a: { b: { c: "deep" } },
  });
  expect(sampleVariables({})).toEqual({});
});

it("reads the line of a problem as the service words it", () => {
  expect(lineOf("line 12: unexpected </mj-column>")).toBe(12);
  expect(lineOf("in the HTML MJML made of it: line 1: blocks nested too deep")).toBe(1);
  expect(lineOf("mjml_content is required")).toBeUndefined();
  expect(lineOf("headline 3: x")).toBeUndefined();
});
