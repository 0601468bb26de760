// A fixture for tests/selftest.sh: a todo test fails without failing node's
// run; tests/run-e2e.sh must fail it unless the allow-list names it.
import { test } from 'node:test';

test('a todo test', { todo: 'not done yet' }, () => { throw new Error('broken'); });
