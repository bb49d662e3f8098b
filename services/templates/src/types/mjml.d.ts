// The parts of MJML 5 this service uses (the packages ship no type declarations).

declare module "mjml" {
  import type { MjmlNode, MjmlValidationError } from "mjml-core";
  interface Mjml2HtmlOptions {
    validationLevel?: "strict" | "soft" | "skip";
    minify?: boolean;
    beautify?: boolean;
    keepComments?: boolean;
    ignoreIncludes?: boolean;
    filePath?: string;
    actualPath?: string;
    /** Web fonts MJML may link, by family (default: five Google Fonts); <mj-font> adds to this object. */
    fonts?: Record<string, string>;
  }
  function mjml2html(
    input: string | MjmlNode,
    options?: Mjml2HtmlOptions,
  ): Promise<{ html: string; json: MjmlNode; errors: MjmlValidationError[] }>;
  export = mjml2html;
}

declare module "mjml-core" {
  export interface MjmlNode {
    tagName: string;
    line?: number;
    attributes?: Record<string, unknown>;
    children?: MjmlNode[];
    content?: string;
  }
  export interface MjmlValidationError {
    line: number;
    message: string;
    tagName: string;
    formattedMessage: string;
  }
  export interface TypeChecker {
    new (value: unknown): { value: unknown; isValid(): boolean; getErrorMessage(): string | undefined };
  }
  export interface ComponentClass {
    endingTag?: boolean;
    getTagName(): string;
    allowedAttributes?: Record<string, string>;
  }
  export const components: Record<string, ComponentClass>;
  export function initializeType(typeConfig: string): TypeChecker;
}

declare module "mjml-validator" {
  import type { ComponentClass, MjmlNode, MjmlValidationError, TypeChecker } from "mjml-core";
  export const dependencies: Record<string, unknown>;
  export default function validate(
    element: MjmlNode,
    options: {
      components: Record<string, ComponentClass>;
      dependencies: Record<string, unknown>;
      initializeType: (typeConfig: string) => TypeChecker;
    },
  ): MjmlValidationError[];
}

declare module "mjml-parser-xml" {
  import type { ComponentClass, MjmlNode } from "mjml-core";
  export default function parse(
    xml: string,
    options: {
      keepComments?: boolean;
      components: Record<string, ComponentClass>;
      filePath?: string;
      actualPath?: string;
      ignoreIncludes?: boolean;
      preprocessors?: unknown[];
    },
  ): MjmlNode;
}
