#include "opcodes.hpp"

namespace mlx5async::prm {

bool is_throttled_opcode(uint16_t opcode) noexcept {
    switch (static_cast<Opcode>(opcode)) {
    case Opcode::CREATE_GENERAL_OBJECT:
    case Opcode::MODIFY_GENERAL_OBJECT:
    case Opcode::QUERY_GENERAL_OBJECT:
    case Opcode::DESTROY_GENERAL_OBJECT: return true;
    default: return false;
    }
}

const char* opcode_name(uint16_t opcode) noexcept {
    switch (static_cast<Opcode>(opcode)) {
    case Opcode::QUERY_HCA_CAP: return "QUERY_HCA_CAP";
    case Opcode::CREATE_MKEY: return "CREATE_MKEY";
    case Opcode::DESTROY_MKEY: return "DESTROY_MKEY";
    case Opcode::QUERY_SPECIAL_CONTEXTS: return "QUERY_SPECIAL_CONTEXTS";
    case Opcode::CREATE_CQ: return "CREATE_CQ";
    case Opcode::DESTROY_CQ: return "DESTROY_CQ";
    case Opcode::CREATE_QP: return "CREATE_QP";
    case Opcode::DESTROY_QP: return "DESTROY_QP";
    case Opcode::RST2INIT_QP: return "RST2INIT_QP";
    case Opcode::INIT2RTR_QP: return "INIT2RTR_QP";
    case Opcode::RTR2RTS_QP: return "RTR2RTS_QP";
    case Opcode::ALLOC_PD: return "ALLOC_PD";
    case Opcode::DEALLOC_PD: return "DEALLOC_PD";
    case Opcode::ALLOC_UAR: return "ALLOC_UAR";
    case Opcode::DEALLOC_UAR: return "DEALLOC_UAR";
    case Opcode::CREATE_SQ: return "CREATE_SQ";
    case Opcode::MODIFY_SQ: return "MODIFY_SQ";
    case Opcode::DESTROY_SQ: return "DESTROY_SQ";
    case Opcode::CREATE_TIS: return "CREATE_TIS";
    case Opcode::DESTROY_TIS: return "DESTROY_TIS";
    case Opcode::ALLOC_TRANSPORT_DOMAIN: return "ALLOC_TRANSPORT_DOMAIN";
    case Opcode::DEALLOC_TRANSPORT_DOMAIN: return "DEALLOC_TRANSPORT_DOMAIN";
    case Opcode::QUERY_NIC_VPORT_CONTEXT: return "QUERY_NIC_VPORT_CONTEXT";
    case Opcode::CREATE_GENERAL_OBJECT: return "CREATE_GENERAL_OBJECT";
    case Opcode::MODIFY_GENERAL_OBJECT: return "MODIFY_GENERAL_OBJECT";
    case Opcode::QUERY_GENERAL_OBJECT: return "QUERY_GENERAL_OBJECT";
    case Opcode::DESTROY_GENERAL_OBJECT: return "DESTROY_GENERAL_OBJECT";
    case Opcode::CREATE_UMEM: return "CREATE_UMEM";
    case Opcode::DESTROY_UMEM: return "DESTROY_UMEM";
    }
    return "UNKNOWN_OPCODE";
}

const char* obj_type_name(uint16_t obj_type) noexcept {
    switch (static_cast<ObjType>(obj_type)) {
    case ObjType::VIRTIO_NET_Q: return "VIRTIO_NET_Q";
    case ObjType::VIRTIO_Q_COUNTERS: return "VIRTIO_Q_COUNTERS";
    }
    return "UNKNOWN_OBJ_TYPE";
}

}  // namespace mlx5async::prm
