#!/bin/sh
# An --exec handler: the job JSON arrives on stdin, its jid and class in
# the environment. Exit 0 means success; anything else fails the job.
payload=$(cat)
echo "ran $HIREDHAND_CLASS jid=$HIREDHAND_JID queue=$HIREDHAND_QUEUE payload=$payload"
