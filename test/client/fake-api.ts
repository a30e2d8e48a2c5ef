import { createClient } from "../../clients/typescript/src/index.js";

/** A scripted API for the client's unit tests: answers in order, and records what was sent. */
export function fakeApi(answers: (Response | Error | ((req: Request) => Response))[]) {
  const sent: { method: string; url: string; headers: Headers; body: string }[] = [];
  const waits: number[] = [];
  let next = 0;
  const client = createClient({
    baseUrl: "https://api.test/",
    apiKey: "sk_test_unit",
    fetch: async (req) => {
      sent.push({ method: req.method, url: req.url, headers: req.headers, body: await req.text() });
      const answer = answers[next++];
      if (answer === undefined) throw new Error(`No answer scripted for request ${next}: ${req.method} ${req.url}`);
      if (answer instanceof Error) throw answer;
      return typeof answer === "function" ? answer(req) : answer;
    },
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
  });
  return { client, sent, waits };
}

export const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

export const envelope = (status: number, code: string, headers: Record<string, string> = {}) =>
  json(
    status,
    {
      error: {
        code,
        message: `message of ${code}`,
        request_id: `req_${code.replace(/\W/g, "")}`,
        details: { hint: code },
        doc_url: `https://api.test/api/v1/docs/errors#${code}`,
      },
    },
    { "X-Request-Id": `req_${code.replace(/\W/g, "")}`, ...headers },
  );
