import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Command } from 'commander';
import { InjectCommander } from 'nest-commander';

/**
 * Help exits 0 and a wrong command line exits 2, for subcommands too: nest-commander sets the exit
 * handler on the root command only, and commander's subcommands do not inherit it (they exit 1).
 * Commander has printed the one-line message by then.
 */
@Injectable()
export class CommanderExitCodes implements OnApplicationBootstrap {
  constructor(@InjectCommander() private readonly commander: Command) {}

  onApplicationBootstrap(): void {
    const visit = (command: Command) => {
      command.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
      for (const sub of command.commands) visit(sub as Command);
    };
    visit(this.commander);
  }
}
