/** Every contract of the store port, looped over every adapter. */
import { adapters } from "./support/adapters.js";
import { describeDelegationContract } from "./support/delegation-contract.js";
import { describeLedgerContract } from "./support/ledger-contract.js";
import { describeLogContract } from "./support/log-contract.js";
import { describeRelayContract } from "./support/relay-contract.js";
import { describeStoreContract } from "./support/store-contract.js";

for (const adapter of await adapters()) {
  describeLogContract(adapter.name, () => adapter.open());
  describeStoreContract(adapter);
  describeLedgerContract(adapter);
  describeRelayContract(adapter);
  describeDelegationContract(adapter);
}
