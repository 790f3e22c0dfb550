import * as z from 'zod/mini';

/** A namespaced identifier such as `company.chart`: at least one dot, no empty segment. */
export const namespacedNameSchema = z
  .templateLiteral([z.string(), '.', z.string()])
  .check(z.regex(/^[^.\s]+(\.[^.\s]+)+$/));

export const textPartSchema = z.object({ type: z.literal('text'), text: z.string() });

export const imagePartSchema = z.object({
  type: z.literal('image'),
  url: z.optional(z.string()),
  data: z.optional(z.unknown()),
  mediaType: z.optional(z.string()),
});

export const filePartSchema = z.object({
  type: z.literal('file'),
  url: z.optional(z.string()),
  data: z.optional(z.unknown()),
  mediaType: z.optional(z.string()),
  name: z.optional(z.string()),
});

/** A part of an extension's own kind, such as `{ type: 'company.chart', data }`. */
export const extensionPartSchema = z.object({ type: namespacedNameSchema, data: z.unknown() });

export const agentContentPartSchema = z.union([textPartSchema, imagePartSchema, filePartSchema, extensionPartSchema]);

/** Message content: plain text, or structured parts that are never flattened. */
export const agentMessageContentSchema = z.union([z.string(), z.array(agentContentPartSchema)]);

export type AgentTextPart = z.infer<typeof textPartSchema>;
export type AgentImagePart = z.infer<typeof imagePartSchema>;
export type AgentFilePart = z.infer<typeof filePartSchema>;
export type AgentExtensionPart = z.infer<typeof extensionPartSchema>;
export type AgentContentPart = z.infer<typeof agentContentPartSchema>;
export type AgentMessageContent = z.infer<typeof agentMessageContentSchema>;
