"""Asking the user for passwords, passphrases and the ssh-copy-id offer.

``PromptAsker`` holds what both front ends share (the once-per-host key offer, its refusal
remembered in the config); ``TerminalAsker`` asks on the terminal like ssh (getpass, echo
off) and gives up clearly when there is no terminal. The app's masked dialog is
``tui.ui.screens.modals.DialogAsker``. Nothing typed here is written anywhere.
"""

import asyncio
import getpass
import sys

from tui.core.text import paste
from tui.core.config import Config, ConfigError
from tui.core.i18n import N_, _
from tui.remote import ssh

NO_TTY = N_("no terminal to ask on: run it in a terminal, or install a key for this box")


def key_offer_text(where, pub_path, will_create):
    text = _("Install your public key %s on %s, so the next connect needs no password?") % (
        pub_path, where)
    if will_create:
        text += (_(" You have no key yet: gputui will create %s (ed25519, no passphrase; "
                   "add one later with `ssh-keygen -p -f %s`).")
                 % (pub_path[:-4], paste.quote(pub_path[:-4])))
    return text


class PromptAsker(ssh.Asker):
    """The key offer: asked once per host; a no is remembered in the config."""

    def __init__(self, host_key):
        self.host_key = host_key

    async def confirm(self, question):
        """True / False, or None when the user cannot be asked."""
        return None

    async def offer_key_install(self, where, pub_path, will_create):
        cfg = Config.load()
        if cfg.host(self.host_key).key_install_declined:
            return False
        answer = await self.confirm(key_offer_text(where, pub_path, will_create))
        if answer is False:
            try:
                cfg.set_host_values(self.host_key, key_install_declined=True)
            except ConfigError:
                pass  # an unreadable config is reported elsewhere; we just ask again next time
        return bool(answer)


class TerminalAsker(PromptAsker):
    """`gputui status/doctor/checklist`: ask like ssh on the terminal, or fail clearly."""

    def __init__(self, host_key, creds_notes=None, stream=None):
        super().__init__(host_key)
        self.notes = creds_notes if creds_notes is not None else []
        self.stream = stream or sys.stderr

    def _tty(self, what):
        if sys.stdin.isatty():
            return True
        self.notes.append(_("%s needed, but %s") % (what, _(NO_TTY)))
        return False

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def _getpass(self, prompt):
        try:
            return getpass.getpass(prompt, stream=self.stream)
        except (EOFError, KeyboardInterrupt):
            return None

    async def ask_password(self, prompt):
        if not self._tty(_("a password")):
            return None
        return await self._run(self._getpass, prompt)

    async def ask_passphrase(self, keyfile):
        if not self._tty(_("the passphrase of %s") % keyfile):
            return None
        return await self._run(self._getpass, _("Enter passphrase for key '%s': ") % keyfile)

    async def ask_kbdint(self, name, instructions, prompts):
        if not self._tty(_("an answer to the server's login prompt")):
            return None

        def ask():
            for line in (name, instructions):
                if line:
                    print(ssh_text(line), file=self.stream)
            answers = []
            for text, echo in prompts:
                if echo:
                    print(ssh_text(text), end="", file=self.stream, flush=True)
                    answer = sys.stdin.readline()
                    if not answer:
                        return None
                    answers.append(answer.rstrip("\n"))
                else:
                    answer = self._getpass(ssh_text(text))
                    if answer is None:
                        return None
                    answers.append(answer)
            return answers
        return await self._run(ask)

    def tell(self, message):
        print("gputui: %s" % message, file=self.stream)

    async def confirm(self, question):
        if not sys.stdin.isatty():
            return None

        def ask():
            try:
                answer = input(question + _(" (yes/no) "))
            except EOFError:
                return None
            return answer.strip().lower() in ("y", "yes", _("yes"))
        print("", file=self.stream)
        return await self._run(ask)


def ssh_text(text):
    """Server-sent prompt text, control characters shown visibly (data, not codes)."""
    return "".join(c if c.isprintable() or c in "\n" else "\\x%02x" % ord(c) for c in text)
