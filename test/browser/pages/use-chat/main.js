// A plain useChat page (what an AI SDK frontend is), pointed at the agent server's chat route.
// Built by test/browser/use-chat.test.ts with vite; `?api=` and `&session=` say where to talk.
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { createElement as h, useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const api = `${params.get("api")}/sessions/${params.get("session")}/chat`;

function Part({ part, onApproval }) {
  if (part.type === "text") return h("p", { className: "text" }, part.text);
  if (part.type !== "dynamic-tool") return null;
  const buttons =
    part.state === "approval-requested"
      ? [
          h(
            "button",
            { key: "a", type: "button", className: "approve", onClick: () => onApproval(part.approval.id, true) },
            "Approve",
          ),
          h(
            "button",
            { key: "d", type: "button", className: "deny", onClick: () => onApproval(part.approval.id, false) },
            "Deny",
          ),
        ]
      : [];
  return h(
    "div",
    { className: "tool", "data-tool": part.toolName, "data-state": part.state },
    `${part.toolName} ${JSON.stringify(part.input)} → ${part.state}${part.output ? `: ${part.output}` : ""}`,
    ...buttons,
  );
}

function App() {
  const [input, setInput] = useState("");
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    transport: new DefaultChatTransport({ api }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const onApproval = (id, approved) => addToolApprovalResponse({ id, approved });
  return h(
    "main",
    null,
    h("p", { id: "status" }, `status: ${status}${error ? ` (${error.message})` : ""}`),
    ...messages.map((message) =>
      h(
        "section",
        { key: message.id, className: `message ${message.role}` },
        h("b", null, message.role),
        ...message.parts.map((part, i) => h(Part, { key: i, part, onApproval })),
      ),
    ),
    h(
      "form",
      {
        onSubmit: (e) => {
          e.preventDefault();
          sendMessage({ text: input });
          setInput("");
        },
      },
      h("input", { id: "input", value: input, onChange: (e) => setInput(e.target.value) }),
      h("button", { id: "send", type: "submit" }, "Send"),
    ),
  );
}

createRoot(document.getElementById("root")).render(h(App));
