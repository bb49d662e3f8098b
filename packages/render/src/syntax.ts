import Handlebars from "handlebars";
import { handlebarsBounds, type TemplateProblem } from "./bounds.js";

// The Handlebars subset templates may use, checked on the AST (never by
// regex) once the iterative scan found the source within TEMPLATE_LIMITS
// (Handlebars' parser recurses on nesting): plain `{{name}}` / `{{metadata.plan}}` mustaches, `{{#if}}`,
// `{{#unless}}` and `{{#each}}` blocks with `{{else}}`, comments. No helpers with
// arguments, partials, decorators or raw blocks; `{{{triple}}}` (unescaped HTML)
// only where the caller allows it (the subject, which is never HTML).
//
// Pure: no I/O. Used on write (to reject a template and list its variables)
// and by the renderer (to know which variables a message lacks).

/** A variable name as integrators write it: `name`, `metadata.plan`. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;

/**
 * Names of Object.prototype members: Handlebars refuses to read them (and logs
 * to the console each time), so a variable cannot have one as a path segment.
 */
const RESERVED = new Set([...Object.getOwnPropertyNames(Object.prototype), "prototype"]);

const BLOCK_HELPERS = new Set(["if", "unless", "each"]);
/** `{{@index}}` and friends, meaningful inside `{{#each}}`. */
const DATA_VARIABLES = new Set(["index", "key", "first", "last"]);

/** A problem of a template source: a syntax error, or a limit exceeded (`limit` set). */
export type SyntaxProblem = TemplateProblem;

export interface SyntaxAnalysis {
  /** Top-level variables the source reads, sorted and unique. */
  variables: string[];
  problems: SyntaxProblem[];
}

export interface AnalyzeOptions {
  /** `{{{x}}}` writes x unescaped: HTML injection in a body, harmless in a subject. */
  allowTripleStash: boolean;
  /** Problems beyond this many are dropped (the first ones are the useful ones). */
  maxProblems?: number;
}

type Node = hbs.AST.Node;
type Program = hbs.AST.Program;
type PathExpression = hbs.AST.PathExpression;

/** Names in scope inside `{{#each}}` blocks: block params shadow variables. */
interface Scope {
  /** How many `{{#each}}` blocks enclose this point (each changes the context). */
  depth: number;
  blockParams: Set<string>;
}

/**
 * Checks a Handlebars source (a subject, an MJML body or the HTML compiled from
 * it) against the subset and TEMPLATE_LIMITS, and lists the variables it reads.
 * A source beyond the limits is not parsed: its problems are the limits.
 */
export function analyzeTemplate(source: string, options: AnalyzeOptions): SyntaxAnalysis {
  const max = options.maxProblems ?? 20;
  const bounds = handlebarsBounds(source);
  if (bounds.length > 0) return { variables: [], problems: bounds.slice(0, max) };
  let ast: Program;
  try {
    ast = Handlebars.parse(source);
  } catch (err) {
    return { variables: [], problems: [parseProblem(err)] };
  }
  const variables = new Set<string>();
  const problems: SyntaxProblem[] = [];
  const problem = (node: Node, message: string) => {
    if (problems.length < max) problems.push({ line: node.loc?.start.line ?? 0, message });
  };

  /** Records a variable read at `scope`, or reports why the path is not allowed. */
  const readPath = (node: Node, path: PathExpression, scope: Scope) => {
    const original = path.original;
    if (path.data) {
      // @root.x reads the top-level variable x; @index etc. only make sense in each.
      const [head, ...rest] = path.parts;
      if (head === "root" && rest.length > 0) {
        const name = rest.join(".");
        if (VARIABLE_NAME.test(name) && !name.split(".").some((part) => RESERVED.has(part))) variables.add(name);
        else problem(node, `"${original}" is not a valid variable name`);
      } else if (!(head !== undefined && DATA_VARIABLES.has(head) && rest.length === 0)) {
        problem(node, `"${original}" is not supported (only @index, @key, @first, @last and @root.<name>)`);
      }
      return;
    }
    if (path.depth > scope.depth) {
      problem(node, `"${original}" climbs out of the template: there are only ${scope.depth} enclosing {{#each}} blocks`);
      return;
    }
    // `this`, `this.x`, `../x`: relative to the current each item (or the root outside one).
    const bare = original.replace(/^(\.\.\/)+/, "").replace(/^this(\.|\/|$)/, "");
    const isThis = /^this(\.|\/|$)/.test(original.replace(/^(\.\.\/)+/, ""));
    if (bare === "") {
      if (scope.depth === 0 && path.depth === 0) problem(node, `"${original}" outside {{#each}} renders the whole variable set`);
      return;
    }
    if (!VARIABLE_NAME.test(bare)) {
      problem(node, `"${original}" is not a valid variable name (letters, digits, _ and dots)`);
      return;
    }
    const reserved = bare.split(".").find((part) => RESERVED.has(part));
    if (reserved) {
      problem(node, `"${original}": ${reserved} is a reserved name`);
      return;
    }
    const head = bare.split(".")[0]!;
    if (!isThis && path.depth === 0 && scope.blockParams.has(head)) return; // an each block param
    // The path is top-level when it climbs out of every enclosing each.
    if (path.depth >= scope.depth) variables.add(bare);
  };

  const visitProgram = (program: Program | undefined, scope: Scope) => {
    if (!program) return;
    for (const node of program.body) visit(node, scope);
  };

  const visit = (node: Node, scope: Scope) => {
    switch (node.type) {
      case "ContentStatement":
      case "CommentStatement":
        return;
      case "MustacheStatement": {
        const m = node as hbs.AST.MustacheStatement;
        if (!m.escaped && !options.allowTripleStash) {
          problem(node, `{{{${pathText(m.path)}}}} writes unescaped HTML and is not allowed; use {{${pathText(m.path)}}}`);
        }
        if (m.path.type !== "PathExpression") {
          problem(node, `a mustache must name a variable, not a ${literalName(m.path.type)}`);
          return;
        }
        if (m.params.length > 0 || (m.hash && m.hash.pairs.length > 0)) {
          problem(node, `helper "${pathText(m.path)}" is not supported: only {{variable}}, {{#if}}, {{#unless}} and {{#each}}`);
          return;
        }
        readPath(node, m.path as PathExpression, scope);
        return;
      }
      case "BlockStatement": {
        const b = node as hbs.AST.BlockStatement;
        const name = pathText(b.path);
        if (b.path.type !== "PathExpression" || !BLOCK_HELPERS.has(name)) {
          problem(node, `block "{{#${name}}}" is not supported: only {{#if}}, {{#unless}} and {{#each}}`);
          return;
        }
        if (b.params.length !== 1 || (b.hash && b.hash.pairs.length > 0)) {
          problem(node, `{{#${name}}} takes exactly one variable`);
          return;
        }
        const param = b.params[0]!;
        if (param.type !== "PathExpression") {
          problem(node, `{{#${name}}} takes a variable, not a ${literalName(param.type)}`);
          return;
        }
        readPath(node, param as PathExpression, scope);
        const params = b.program?.blockParams ?? [];
        if (name !== "each" && params.length > 0) problem(node, `{{#${name}}} takes no block parameters`);
        const inner: Scope =
          name === "each"
            ? { depth: scope.depth + 1, blockParams: new Set([...scope.blockParams, ...params]) }
            : scope;
        visitProgram(b.program, inner);
        // The {{else}} of an each runs in the outer context.
        visitProgram(b.inverse, scope);
        return;
      }
      case "PartialStatement":
      case "PartialBlockStatement":
        problem(node, "partials ({{> name}}) are not supported");
        return;
      case "Decorator":
      case "DecoratorBlock":
        problem(node, "decorators ({{* name}}) are not supported");
        return;
      default:
        problem(node, `unsupported template syntax (${node.type})`);
    }
  };

  visitProgram(ast, { depth: 0, blockParams: new Set() });
  return { variables: [...variables].sort(), problems };
}

function pathText(expr: hbs.AST.Expression): string {
  if (expr.type === "PathExpression") return (expr as PathExpression).original;
  if (expr.type === "StringLiteral" || expr.type === "NumberLiteral" || expr.type === "BooleanLiteral") {
    return String((expr as hbs.AST.StringLiteral).original);
  }
  return expr.type;
}

function literalName(type: string): string {
  return type.replace(/Literal$|Expression$/, "").toLowerCase() || type;
}

/** Handlebars' parse errors name the line in their message or in `lineNumber`. */
function parseProblem(err: unknown): SyntaxProblem {
  const e = err as { message?: unknown; lineNumber?: unknown };
  const message = typeof e.message === "string" ? e.message : String(err);
  const fromMessage = /^Parse error on line (\d+):/.exec(message);
  if (fromMessage) {
    // "Parse error on line 3:\n<excerpt>\n---^\nExpecting 'X', 'Y', got 'EOF'"
    const lastLine = message.split("\n").pop() ?? "";
    const got = /got '([^']+)'/.exec(lastLine)?.[1];
    const what = got === "EOF" ? "the template ends inside an open {{…}} or {{#block}}" : `unexpected ${got ?? "token"}`;
    return { line: Number(fromMessage[1]), message: `syntax error: ${what}` };
  }
  const line = typeof e.lineNumber === "number" ? e.lineNumber : 0;
  // e.g. "if doesn't match each - 2:3": a block closed with the wrong name.
  return { line, message: message.replace(/ - \d+:\d+$/, "") };
}
