import { createRuntime } from 'turnstate';
import { createAnthropicModel } from 'turnstate/anthropic';

// The key comes from ANTHROPIC_API_KEY (and the endpoint from ANTHROPIC_BASE_URL, when set).
const model = createAnthropicModel({ model: 'claude-sonnet-4-6', contextModel: 'claude-haiku-4-5' });
const runtime = createRuntime({ model });
runtime.registries.actors.register({ name: 'concierge', system: 'You are a hotel concierge in Corfu Town. Be brief.' });
runtime.registries.actors.register({
  name: 'planner',
  system: 'You plan day trips around Corfu.',
  thinking: { budgetTokens: 2048 }, // thinking blocks arrive as reasoning-trace parts
  maxTokens: 8192,
});

const actor = process.argv[2] === 'planner' ? 'planner' : 'concierge';
const session = await runtime.createSession({ actor });
const streamed = new Set<string>();
session.events().subscribe((e) => {
  if (e.type === 'part.delta') {
    // token by token, while respond() is still being written
    streamed.add(`${e.callId}:${e.index}`);
    process.stdout.write(e.text);
  }
  if (e.type === 'part.received') {
    // final; print what did not stream (reasoning traces, data parts)
    if (streamed.has(`${e.callId}:${e.index}`)) console.log(`  [${e.part.metadata.partType}]`);
    else console.log(`[${e.part.metadata.partType}] ${e.part.text ?? JSON.stringify(e.part.data)}`);
  }
});
const turn = await session.send(process.argv[3] ?? 'What should I see in one afternoon?');
const outcome = await turn.settled;
console.log(`settled: ${outcome.finalizedBy}${outcome.stop ? ` (${outcome.stop})` : ''}`, outcome.usage);
if (outcome.error) console.log(`error: ${outcome.error.code}: ${outcome.error.message}`);
await runtime.close();
