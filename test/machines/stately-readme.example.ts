import { createActor, createMachine } from 'xstate';
import { createRegistries, createSessionMachine, DEFAULT_LIMITS, sessionMachineLimits } from 'turnstate';

// The session machine with your own turn states, registered as your application does.
const registries = createRegistries();
registries.turnStates.register({
  id: 'awaiting-review',
  meta: { description: 'The draft waits for a reviewer.', isTerminal: false, emitsEnvelope: false, holdsActor: true, resumeOn: 'review' },
});
const machine = createSessionMachine(registries.turnStates);

// Its config is JSON but for `context`, a function of the session's input: put in its place
// the context a default runtime starts a session with.
const input = { entryActor: 'assistant', ...sessionMachineLimits(DEFAULT_LIMITS) };
const context = createActor(machine, { input }).getSnapshot().context;
const json = JSON.stringify({ ...machine.config, context }, null, 2);
console.log(json); // paste into Stately

// The JSON runs as it is once the machine's named implementations are supplied.
const imported = createMachine(JSON.parse(json) as typeof machine.config).provide(machine.implementations);
const actor = createActor(imported).start();
actor.send({ type: 'START', turnId: 't1' });
console.log(JSON.stringify(actor.getSnapshot().value)); // {"turn":{"awaiting":"ready"}}
