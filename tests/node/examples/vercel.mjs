import { DefaultChatTransport, readUIMessageStream } from "ai";

const server = "http://127.0.0.1:8000";
const transport = new DefaultChatTransport({
  api: `${server}/runs?protocol=vercel`,
  // agentrt takes a question, not a chat: send the last message's text.
  prepareSendMessagesRequest: ({ messages }) => ({
    body: { query: messages.at(-1).parts.find((p) => p.type === "text").text },
  }),
});
const stream = await transport.sendMessages({
  chatId: "demo",
  trigger: "submit-message",
  messages: [{ id: "q1", role: "user", parts: [{ type: "text", text: "What is 1234 + 5678?" }] }],
});
let message;
for await (message of readUIMessageStream({ stream }));
for (const part of message.parts) {
  if (part.type === "text") console.log(part.text);
  if (part.type.startsWith("tool-")) console.log(part.type, part.input, "→", part.output);
}
console.log(message.metadata.status);
