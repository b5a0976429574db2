# tests/ruby/activejob_push.rb -- pushes Active Job jobs the way a Rails 6.1 app does, through
# Debian's ruby-activejob and its Sidekiq adapter (Sidekiq 6.4's client):
#   ruby activejob_push.rb now CLASS ARG...     CLASS.perform_later(*ARGS)
#   ruby activejob_push.rb later SECONDS CLASS ARG...   CLASS.set(wait: SECONDS).perform_later(*ARGS)
# Prints the provider_job_id (Sidekiq's jid) of the pushed job.
require_relative "helper"
require "active_job"
require "active_job/queue_adapters/sidekiq_adapter"

ActiveJob::Base.queue_adapter = :sidekiq
ActiveJob::Base.logger = Logger.new(nil)

mode = ARGV.shift
wait = mode == "later" ? Float(ARGV.shift) : nil
name = ARGV.shift
klass = Class.new(ActiveJob::Base) { def perform(*); end }
# a named constant, as in an app (Active Job serializes the class name)
names = name.split("::")
parent = Object
names[0..-2].each { |n| parent = parent.const_defined?(n, false) ? parent.const_get(n) : parent.const_set(n, Module.new) }
parent.const_set(names.last, klass)
args = ARGV.map { |a| a =~ /\A-?\d+\z/ ? a.to_i : a }
job = wait ? klass.set(wait: wait).perform_later(*args) : klass.perform_later(*args)
abort "perform_later did not enqueue" unless job && job.provider_job_id
puts job.provider_job_id
