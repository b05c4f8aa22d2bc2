import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { Command } from 'commander';
import { InjectCommander } from 'nest-commander';

/**
 * Help and --version exit 0 and a wrong command line exits 2, for subcommands too: nest-commander
 * sets the exit handler on the root command only, and commander's subcommands do not inherit it
 * (they exit 1). Commander has printed the one-line message by then.
 */
@Injectable()
export class CommanderExitCodes implements OnApplicationBootstrap {
  constructor(@InjectCommander() private readonly commander: Command) {}

  onApplicationBootstrap(): void {
    replaceHelpCommand(this.commander);
    const visit = (command: Command) => {
      command.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
      for (const sub of command.commands) visit(sub as Command);
    };
    visit(this.commander);
  }
}

/**
 * `help <command> [subcommand]` as commander's own, except that an unknown name is one `error:`
 * line like any other unknown command (commander's prints the whole help to stderr instead).
 */
function replaceHelpCommand(program: Command): void {
  program.addHelpCommand(false);
  program
    .command('help [command...]')
    .description('display help for command')
    .action((names: string[]) => {
      let command = program;
      names.forEach((name, i) => {
        const sub = command.commands.find((c) => c.name() === name || c.aliases().includes(name));
        if (!sub) program.error(`error: unknown command '${names.slice(0, i + 1).join(' ')}'`, { code: 'commander.unknownCommand' });
        command = sub as Command;
      });
      command.help();
    });
}
