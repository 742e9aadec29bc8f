"""What the box tells the user: the message templates (events), the outbox with its rate
limits and retries (queue), the HTTP senders (send) and the watch's notifier (notifier)."""
