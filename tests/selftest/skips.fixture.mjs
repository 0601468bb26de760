// A fixture for tests/selftest.sh, not a test of skill-mcp: one test passes,
// one skips itself. Run through tests/run-e2e.sh, the skip must fail the run
// unless the allow-list names it.
import { test } from 'node:test';

test('a test that passes', () => {});
test('a test that skips itself', (t) => { t.skip('the feature it checks is missing'); });
