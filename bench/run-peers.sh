#!/bin/bash
# Runs every peer variant: perf (turns/s, 7 runs x 1.5 s after warm-up) and mem (1000 sessions), pinned to core 0.
# Each invocation is its own process; bounded by timeout. (bench/run.mjs is the full suite with turnstate.)
cd "$(dirname "$0")"
VARIANTS="baseline:loop xstate:actor xstate:actor+persist-every-step ai-sdk:generateText ai-sdk:streamText openai-agents:history openai-agents:memory-session langgraph:no-checkpointer langgraph:memorysaver langgraph:react-no-checkpointer langgraph:react-memorysaver mastra:generate"
MODES=${MODES:-"perf mem"}
for mode in $MODES; do
  for fv in $VARIANTS; do
    fw=${fv%%:*}; v=${fv#*:}
    timeout 120 taskset -c 0 node --expose-gc peers/harness.mjs "$fw" "$v" "$mode" 2>&1 | grep -v "^\s*$" | grep -v '^{"suite"' | tail -3
  done
done
