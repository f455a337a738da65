import { createRuntime } from '../src/runtime.js';
import { createScriptedModel } from '../src/models/scripted.js';
const model = createScriptedModel({
  rules: [
    { when: { on: 'user' }, respond: { blocks: [
      { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Looking up flights.', metadata: { partType: 'ack' } }], turnState: 'awaiting' } },
      { type: 'tool_use', name: 'tool_a', input: { q: 'x' } } ] } },
    { when: { on: 'tool_result', tool: 'tool_a' }, respond: { blocks: [
      { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Filtering.', metadata: { partType: 'thinking' } }], turnState: 'awaiting' } },
      { type: 'tool_use', name: 'tool_b', input: { q: 'y' } } ] } },
    { when: { on: 'tool_result', tool: 'tool_b' }, respond: { blocks: [
      { type: 'tool_use', name: 'respond', input: { parts: [{ text: 'Two direct options.', metadata: { partType: 'response' } }, { data: { n: 2 }, metadata: { partType: 'domain-data' } }], turnState: 'complete' } } ] } },
  ],
});
const rt = createRuntime({ model });
for (const n of ['tool_a', 'tool_b']) rt.registries.tools.register({ name: n, description: 'A tool for the benchmark', inputSchema: { type: 'object', properties: { q: { type: 'string' } } }, scope: 'generalist', handler: (a: any) => ({ ok: a.q }) });
rt.registries.actors.register({ name: 'a', tools: ['tool_a', 'tool_b'] });
let id = 0;
const turn = async () => { const s = await rt.createSession({ actor: 'a', id: `s${id++}` }); await (await s.send('hi')).settled; await rt.deleteSession(s.id); };
for (let i = 0; i < 3000; i++) await turn();
const res: number[] = [];
for (let r = 0; r < 7; r++) { const t0 = performance.now(); const c0 = process.cpuUsage(); let n = 0; while (performance.now() - t0 < 1000) { await turn(); n++; } const c = process.cpuUsage(c0); res.push((c.user + c.system) / n); }
res.sort((a, b) => a - b);
console.log(`median CPU us/turn: ${res[3]!.toFixed(1)}  (${res.map((x) => x.toFixed(0)).join(' ')})`);
