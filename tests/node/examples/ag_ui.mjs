import { HttpAgent } from "@ag-ui/client";

// agentrt takes a question, not a thread: send the last user message's text.
class AgentrtAgent extends HttpAgent {
  requestInit(input) {
    const asked = input.messages.filter((m) => m.role === "user").at(-1);
    return { ...super.requestInit(input), body: JSON.stringify({ query: asked.content }) };
  }
}

const agent = new AgentrtAgent({ url: "http://127.0.0.1:8000/runs?protocol=ag-ui" });
agent.addMessage({ id: "q1", role: "user", content: "What is 1234 + 5678?" });
const { result } = await agent.runAgent();
for (const m of agent.messages) {
  if (m.role === "assistant" && m.content) console.log(m.content);
  for (const call of m.toolCalls ?? []) console.log(call.function.name, call.function.arguments);
  if (m.role === "tool") console.log("→", m.content);
}
console.log(result.status, result.answer);
