/**
 * Writes every (function, action, resource kind) the example stack's roles grant, a JSON array, to the file its
 * argument names. `emulators.ts` runs it beside the suites, so the IAM check at the end of a run does not wait on a
 * synth (6 s on one core, when the other has nothing left to do).
 */
import { writeFileSync } from 'node:fs';
import { type CloudFormation, grantedUses } from '../helpers/iam-usage';
import { synthTemplate } from '../helpers/synth';

const [file] = process.argv.slice(2);
if (!file) throw new Error('usage: granted-uses.ts <file to write>');
const { stack, template } = synthTemplate();
writeFileSync(file, JSON.stringify([...grantedUses(stack, template.toJSON() as CloudFormation)]));
